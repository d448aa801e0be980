import type { ServerConfig } from './config/config.js';
import type { KeyRing } from './oauth/keys.js';
import type { AbuseLimits } from './oauth/limits.js';
import type { TokenIssuer } from './oauth/tokens.js';
import type { Store } from './store/store.js';
import type { PasswordHasher } from './util/password-pool.js';
import type { Continuations } from './web/continuation.js';
import type { TrustedDevices } from './web/trusted-device.js';
import type { Sessions } from './web/session.js';

/** What every plugin needs, passed down explicitly as plugin options. */
export interface AppContext {
  config: ServerConfig;
  store: Store;
  keys: KeyRing;
  tokens: TokenIssuer;
  sessions: Sessions;
  /** Abuse limits, consumed before the work they protect. */
  limits: AbuseLimits;
  /** Password hashing on threads of its own (never behind token signing). */
  passwords: PasswordHasher;
  continuations: Continuations;
  /** Device cookies: browsers where a user signed in before (their attempts are not slowed by an attack on the account). */
  trustedDevices: TrustedDevices;
}

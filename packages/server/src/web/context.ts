import type { OAuthContext } from '../oauth/context.js';
import type { PasswordHasher } from '../util/password-pool.js';
import type { Continuations } from './continuation.js';
import type { Flash } from './flash.js';
import type { Sessions } from './session.js';
import type { TrustedDevices } from './trusted-device.js';

/** What the pages need besides the protocol logic: the browser's state and password hashing. */
export interface WebContext extends OAuthContext {
  sessions: Sessions;
  /** Password hashing on threads of its own (never behind token signing). */
  passwords: PasswordHasher;
  continuations: Continuations;
  /** Device cookies: browsers where a user signed in before (their attempts are not slowed by an attack on the account). */
  trustedDevices: TrustedDevices;
  /** One-time notices from a page's POST to the page its redirect leads to (the account and passkey routes). */
  flash: Flash;
}

import type { UpstreamIssuers } from './workloads.js';
import type { ServerConfig } from '../config/config.js';
import type { BackchannelLogout } from './backchannel-logout.js';
import type { Store } from '../store/store.js';
import type { ProtocolMetrics } from '../util/metrics.js';
import type { ClientJwks } from './client-jwks.js';
import type { DpopNonces } from './dpop.js';
import type { DpopKeys } from './dpop-signature.js';
import type { KeyRing } from './keys.js';
import type { AbuseLimits } from './limits.js';
import type { TokenIssuer } from './tokens.js';

/**
 * What the protocol logic needs, passed down explicitly (no module-level
 * singletons): the configuration, the store, the signing keys and token
 * issuer, the abuse limits (consumed before the work they protect), and
 * where to report what the metrics count (`NO_METRICS` when they are off),
 * and the DPoP nonces.
 */
export interface OAuthContext {
  config: ServerConfig;
  store: Store;
  keys: KeyRing;
  tokens: TokenIssuer;
  limits: AbuseLimits;
  metrics: ProtocolMetrics;
  /** DPoP server nonces (RFC 9449 §8), the same on every instance. */
  dpopNonces: DpopNonces;
  /** DPoP proof keys imported once (RFC 9449 §4.3 (6)), per instance. */
  dpopKeys: DpopKeys;
  /** Telling applications of logouts (OpenID Connect Back-Channel Logout 1.0). */
  backchannel: BackchannelLogout;
  /** The JWK Sets of private_key_jwt clients, a jwks_uri's fetched and kept per instance. */
  clientJwks: ClientJwks;
  /** The CI providers' discovery and keys, for the issuers trust policies name (oauth/workloads.ts). */
  upstreamIssuers: UpstreamIssuers;
}

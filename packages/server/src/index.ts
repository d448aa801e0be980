export { buildApp } from './app.js';
export { loadConfig, normalizeIssuer, ConfigError, type ServerConfig } from './config/config.js';
export { openStore, parseDatabaseUrl, type OpenOptions } from './store/open.js';
export {
  Store,
  StoreError,
  GRANT_TYPES,
  type Application,
  type GrantType,
  type DeviceAuthorization,
  type DevicePollSummary,
} from './store/store.js';
export { bootstrapStore, registerApplication, BUILTIN_CLIENT_ID, type NewAppInput } from './oauth/registration.js';
export { addUser } from './oauth/accounts.js';
export { passwordHashParams } from './config/defaults.js';
export { withStore } from './operator/shared.js';
export { InputError } from './util/input-error.js';
export { generateSigningKey, KeyRing, SIGNING_ALGS } from './oauth/keys.js';
export { matchRedirectUri, callbackUrlProblem } from './oauth/redirect-uri.js';
export {
  authenticateLdap,
  escapeFilterValue,
  ldapSettingsProblem,
  type LdapOptions,
  type LdapOutcome,
  type LdapSettings,
} from './connectors/ldap.js';

export { buildApp } from './app.js';
export { loadConfig, normalizeIssuer, ConfigError, type ServerConfig } from './config/config.js';
export { openStore, parseDatabaseUrl, type OpenOptions } from './store/open.js';
export { Store, StoreError, GRANT_TYPES, type Application, type GrantType } from './store/store.js';
export { bootstrapStore, addUser, registerApplication, InputError, BUILTIN_CLIENT_ID } from './bootstrap.js';
export { generateSigningKey, KeyRing, SIGNING_ALGS } from './oauth/keys.js';
export { pendingDeviceAuthorization } from './oauth/device-authorization.js';
export { matchRedirectUri, callbackUrlProblem } from './oauth/redirect-uri.js';

import { USERNAME_PATTERN } from './config/defaults.js';
import { callbackUrlProblem } from './oauth/redirect-uri.js';
import { SUPPORTED_SCOPES } from './oauth/scopes.js';
import { GRANT_TYPES, StoreError, type Application, type GrantType, type Store } from './store/store.js';
import { randomToken, sha256Hex } from './util/crypto.js';
import { hashPassword } from './util/password.js';
import { randomUUID } from 'node:crypto';

/** The CLI's own public application, created on the first start of an empty store. */
export const BUILTIN_CLIENT_ID = 'authcli';

/**
 * First start on an empty store: create the built-in public `authcli`
 * application (loopback callback, device grant allowed) so `authcli login`
 * works out of the box. Runs once per store; deleting the application later
 * is respected.
 */
export async function bootstrapStore(store: Store, now: number): Promise<void> {
  const marker = await store.getOrCreateSetting('bootstrapped_at', () => 'pending');
  if (marker !== 'pending') return;
  try {
    await store.createApplication({
      clientId: BUILTIN_CLIENT_ID,
      ownerId: null,
      name: 'authcli',
      kind: 'public',
      secretHash: null,
      callbackUrls: ['http://127.0.0.1/callback'],
      scopes: [...SUPPORTED_SCOPES],
      grantTypes: [...GRANT_TYPES],
      idTokenAlg: 'RS256',
      createdAt: now,
    });
  } catch (err) {
    if (!(err instanceof StoreError && err.code === 'duplicate')) throw err;
  }
  await store.setSetting('bootstrapped_at', String(now));
}

export class InputError extends Error {
  override name = 'InputError';
}

export const MIN_PASSWORD_LENGTH = 8;

/** Creates a user with an scrypt password hash. */
export async function addUser(
  store: Store,
  input: { username: string; password: string; admin?: boolean; name?: string | null; email?: string | null },
  now: number,
) {
  if (!USERNAME_PATTERN.test(input.username)) throw new InputError('username must be 1-64 characters of letters, digits and . _ @ -');
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new InputError(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  return store.createUser({
    id: randomUUID(),
    username: input.username,
    password_hash: await hashPassword(input.password),
    name: input.name ?? null,
    email: input.email ?? null,
    is_admin: input.admin ? 1 : 0,
    disabled_at: null,
    created_at: now,
  });
}

/**
 * The operator's password reset: checks the new password as `users add`
 * does, stores its scrypt hash and ends the user's sessions. Returns how many
 * sessions were ended; the caller clears the failed sign-in counters.
 */
export async function resetUserPassword(store: Store, username: string, password: string): Promise<{ username: string; sessionsEnded: number }> {
  if (password.length < MIN_PASSWORD_LENGTH) throw new InputError(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  const user = await store.findUserByUsername(username);
  if (!user) throw new StoreError('not_found', `no user ${username}`);
  const sessionsEnded = await store.resetPassword(user.id, await hashPassword(password));
  return { username: user.username, sessionsEnded };
}

/** The grants an application gets when none are named: the code flow and its refresh tokens. */
export const DEFAULT_GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token'];

export interface NewAppInput {
  name: string;
  kind: string;
  callbackUrls: string[];
  scopes: string[];
  grantTypes?: string[];
  idTokenAlg?: string;
  ownerId?: string | null;
  /** OpenID Connect RP-Initiated Logout 1.0 §3.1; the same rules as callback URLs. */
  postLogoutRedirectUris?: string[];
}

export interface ApplicationFields {
  name: string;
  callbackUrls: string[];
  scopes: string[];
  grantTypes: GrantType[];
  idTokenAlg: 'RS256' | 'ES256';
  postLogoutRedirectUris: string[];
}

/** Checks what a person or operator typed for an application; the same rules for the CLI and the dashboard. */
export function validateApplicationFields(input: Omit<NewAppInput, 'kind' | 'ownerId'>): ApplicationFields {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new InputError('name must be 1-100 characters');
  const grantTypes = input.grantTypes ?? [...DEFAULT_GRANT_TYPES];
  if (grantTypes.length === 0) throw new InputError('allow at least one grant type');
  for (const g of grantTypes) {
    if (!(GRANT_TYPES as readonly string[]).includes(g)) throw new InputError(`unknown grant type ${g} (one of ${GRANT_TYPES.join(', ')})`);
  }
  const callbackUrls = [...new Set(input.callbackUrls.map((u) => u.trim()).filter(Boolean))];
  if (grantTypes.includes('authorization_code') && callbackUrls.length === 0) {
    throw new InputError('at least one callback URL is required for the authorization code grant');
  }
  if (callbackUrls.length > 20) throw new InputError('at most 20 callback URLs');
  for (const url of callbackUrls) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new InputError(problem);
  }
  if (input.scopes.length === 0) throw new InputError('at least one scope is required');
  for (const s of input.scopes) {
    if (!(SUPPORTED_SCOPES as readonly string[]).includes(s)) throw new InputError(`unknown scope ${s} (one of ${SUPPORTED_SCOPES.join(', ')})`);
  }
  // OIDC Core §11: offline_access asks for a refresh token. Allowing the scope without the grant would show it on
  // the consent page and then issue none; refused, so the operator chooses which one is meant.
  if (input.scopes.includes('offline_access') && !grantTypes.includes('refresh_token')) {
    throw new InputError('the offline_access scope needs the refresh_token grant: allow refresh_token as well, or drop offline_access from the scopes');
  }
  const postLogoutRedirectUris = [...new Set((input.postLogoutRedirectUris ?? []).map((u) => u.trim()).filter(Boolean))];
  if (postLogoutRedirectUris.length > 20) throw new InputError('at most 20 post-logout redirect URIs');
  for (const url of postLogoutRedirectUris) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new InputError(`post-logout redirect URI: ${problem}`);
  }
  const idTokenAlg = input.idTokenAlg ?? 'RS256';
  if (idTokenAlg !== 'RS256' && idTokenAlg !== 'ES256') throw new InputError('ID token algorithm must be RS256 or ES256');
  return { name, callbackUrls, scopes: [...new Set(input.scopes)], grantTypes: [...new Set(grantTypes)] as GrantType[], idTokenAlg, postLogoutRedirectUris };
}

/** A fresh client secret (256 bits) and the SHA-256 that is all the store keeps of it. */
export function newClientSecret(): { secret: string; hash: string } {
  const secret = randomToken(32);
  return { secret, hash: sha256Hex(secret) };
}

/** Validates and registers an application; returns it with the one-time plaintext secret for confidential ones. */
export async function registerApplication(
  store: Store,
  input: NewAppInput,
  now: number,
): Promise<{ app: Application; clientSecret: string | undefined }> {
  if (input.kind !== 'public' && input.kind !== 'confidential') throw new InputError('kind must be public or confidential');
  const fields = validateApplicationFields(input);
  const secret = input.kind === 'confidential' ? newClientSecret() : undefined;
  const app = await store.createApplication({
    clientId: randomToken(16),
    ownerId: input.ownerId ?? null,
    kind: input.kind,
    secretHash: secret?.hash ?? null,
    ...fields,
    createdAt: now,
  });
  return { app, clientSecret: secret?.secret };
}

import { randomUUID } from 'node:crypto';
import { MIN_PASSWORD_LENGTH, SIGNIN_PASSWORD_MAX, USERNAME_PATTERN } from '../config/defaults.js';
import { type GrantHolder, type NewUser, serializeClaims, StoreError, type Store, type User } from '../store/store.js';
import { applyClaimsPatch, type ClaimsPatch } from './claims.js';
import { InputError } from '../util/input-error.js';
import { hashPassword, type PasswordHashParams } from '../util/password.js';

/**
 * Why `password` cannot be one, or undefined: the rule every way of setting a password keeps (the operator's
 * commands, the admin API, the account page). Longer than the sign-in form takes, it could never be used.
 */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `password must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > SIGNIN_PASSWORD_MAX) return `password must be at most ${SIGNIN_PASSWORD_MAX} characters`;
  return undefined;
}

/** Throws when `username` is not one this server takes. */
export function checkUsername(username: string): void {
  if (!USERNAME_PATTERN.test(username)) throw new InputError('username must be 1-64 characters of letters, digits and . _ @ -');
}

/** Throws {@link passwordProblem}'s reason as an InputError. */
export function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new InputError(problem);
}

/** A new user's row: the username and password checked, the password's Argon2id hash made with `params` (the configured cost). */
export async function newUserRow(
  input: { username: string; password: string; admin?: boolean; name?: string | null; email?: string | null },
  now: number,
  params: PasswordHashParams,
): Promise<NewUser> {
  checkUsername(input.username);
  checkPassword(input.password);
  // The name and email are claims like any other: checked the same way, and updated_at is when they were given.
  const patch: ClaimsPatch = {};
  if (input.name) patch.name = input.name;
  if (input.email) patch.email = input.email;
  const claims = applyClaimsPatch({}, patch);
  const any = Object.keys(claims).length > 0;
  return {
    id: randomUUID(),
    username: input.username,
    password_hash: await hashPassword(input.password, params),
    claims: serializeClaims(claims),
    claims_updated_at: any ? now : null,
    is_admin: input.admin ? 1 : 0,
    disabled_at: null,
    created_at: now,
  };
}

/** Creates a user ({@link newUserRow}). */
export async function addUser(
  store: Store,
  input: { username: string; password: string; admin?: boolean; name?: string | null; email?: string | null },
  now: number,
  params: PasswordHashParams,
) {
  return store.users.create(await newUserRow(input, now, params));
}

/**
 * Applies a claims patch (claims.ts) to a user's claims, checked whole
 * before anything is written, as one conditional update that concurrent
 * updates of other claims do not undo. Returns the user as updated.
 * @throws InputError, StoreError not_found
 */
export async function updateUserClaims(store: Store, username: string, patch: ClaimsPatch, now: number): Promise<User> {
  const user = await store.users.findByUsername(username);
  if (!user) throw new StoreError('not_found', `no user ${username}`);
  return store.users.updateClaims(user.id, (current) => applyClaimsPatch(current, patch), now);
}

/**
 * The operator's password reset: checks the new password as `users add`
 * does, stores its Argon2id hash and ends the user's sessions; with
 * `revokeTokens`, revokes every grant of the user too. Returns the session IDs
 * (`sid`) of the sessions ended and, with `revokeTokens`, the holders of the
 * grants it revoked (both for back-channel logout); the caller clears the
 * failed sign-in counters.
 */
export async function resetUserPassword(
  store: Store,
  username: string,
  password: string,
  options: { revokeTokens?: boolean; now?: number; params?: PasswordHashParams; passwordHash?: string } = {},
): Promise<{
  userId: string;
  username: string;
  sessionsEnded: string[];
  grantsRevoked: number;
  holders: GrantHolder[];
}> {
  checkPassword(password);
  const user = await store.users.findByUsername(username);
  if (!user) throw new StoreError('not_found', `no user ${username}`);
  const now = options.now ?? Date.now();
  const hash = options.passwordHash ?? (await hashPassword(password, options.params));
  const sessionsEnded = await store.users.resetPassword(user.id, hash);
  // After a leaked password: the applications' refresh and access tokens of the user stop working too.
  const holders = options.revokeTokens ? await store.grants.revokeForUser(user.id, now) : [];
  return { userId: user.id, username: user.username, sessionsEnded, grantsRevoked: holders.length, holders };
}

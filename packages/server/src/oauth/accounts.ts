import { randomUUID } from 'node:crypto';
import { MIN_PASSWORD_LENGTH, USERNAME_PATTERN } from '../config/defaults.js';
import { StoreError, type Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { hashPassword } from '../util/password.js';

/** Creates a user with an scrypt password hash. */
export async function addUser(
  store: Store,
  input: { username: string; password: string; admin?: boolean; name?: string | null; email?: string | null },
  now: number,
) {
  if (!USERNAME_PATTERN.test(input.username)) throw new InputError('username must be 1-64 characters of letters, digits and . _ @ -');
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new InputError(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  return store.users.create({
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
export async function resetUserPassword(
  store: Store,
  username: string,
  password: string,
): Promise<{ username: string; sessionsEnded: number }> {
  if (password.length < MIN_PASSWORD_LENGTH) throw new InputError(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  const user = await store.users.findByUsername(username);
  if (!user) throw new StoreError('not_found', `no user ${username}`);
  const sessionsEnded = await store.users.resetPassword(user.id, await hashPassword(password));
  return { username: user.username, sessionsEnded };
}

import { passwordHashParams } from '../config/defaults.js';
import { checkPassword, newUserRow, resetUserPassword, updateUserClaims } from '../oauth/accounts.js';
import type { ClaimsPatch } from '../oauth/claims.js';
import { accountCounterKeys } from '../oauth/limits.js';
import { claimsOf, StoreError, type Store, type User } from '../store/store.js';
import { hashPassword } from '../util/password.js';
import { type AdminContext, audited, changedFields, type Page, type PageRequest, pageOf } from './context.js';

/**
 * Users as the admin API answers them and `users list --json` prints them
 * (`password` is never read back; `id` is the `sub` of their tokens).
 */
export interface UserResource {
  id: string;
  username: string;
  name: string | null;
  email: string | null;
  admin: boolean;
  disabled: boolean;
  /** The connectors this person signs in through (docs/connectors.md); none for a local account. */
  connectors: string[];
  created: string;
}

export async function userResource(store: Store, u: User): Promise<UserResource> {
  const claims = claimsOf(u);
  return {
    id: u.id,
    username: u.username,
    name: claims.name ?? null,
    email: claims.email ?? null,
    admin: u.is_admin === 1,
    disabled: u.disabled_at !== null,
    connectors: (await store.connectors.linksOf(u.id)).map((l) => l.connectorId),
    created: new Date(Number(u.created_at)).toISOString(),
  };
}

/** The audit target of a user: their sub, with the username for people reading the trail. */
const target = (u: Pick<User, 'id' | 'username'>) => ({ type: 'user', id: u.id, name: u.username });

/** The fields of a user an audit row compares (never the password hash). */
const audible = (r: UserResource) => ({ username: r.username, name: r.name, email: r.email, admin: r.admin, disabled: r.disabled });

export async function findUser(store: Store, username: string): Promise<User> {
  const user = await store.users.findByUsername(username);
  if (!user) throw new StoreError('not_found', `no user ${username}`);
  return user;
}

/** Every user, or a page of them in username order. */
export async function listUsers(store: Store, page?: PageRequest): Promise<Page<UserResource>> {
  const all = await store.users.list();
  const chosen = page ? pageOf(all, (u) => u.username.toLowerCase(), page) : { items: all, next: undefined };
  return { items: await Promise.all(chosen.items.map((u) => userResource(store, u))), next: chosen.next };
}

export interface NewUserInput {
  username: string;
  password: string;
  admin?: boolean | undefined;
  name?: string | null | undefined;
  email?: string | null | undefined;
}

/** Adds a user (the password hashed before the transaction opens: a hash holds no lock). */
export async function createUser(ctx: AdminContext, input: NewUserInput): Promise<UserResource> {
  const row = await newUserRow({ ...input, admin: input.admin ?? false }, ctx.now, passwordHashParams(ctx.config.passwordHashCost));
  return ctx.store.changes(async () => {
    const user = await ctx.store.users.create(row);
    const made = await userResource(ctx.store, user);
    await audited(ctx, { action: 'user.created', target: target(user), detail: audible(made) });
    return made;
  });
}

/** What an update may change; what is absent stays. `claims` is a JSON merge patch of the standard claims (claims.ts). */
export interface UserPatch {
  name?: string | null | undefined;
  email?: string | null | undefined;
  admin?: boolean | undefined;
  disabled?: boolean | undefined;
  password?: string | undefined;
  claims?: ClaimsPatch | undefined;
}

/**
 * Updates a user: claims (name and email among them), administrator, disabled, password. A new password ends
 * the user's sessions and clears their failed sign-in counters, as `users reset-password` does; disabling
 * tells the applications holding the user's sign-ins. One transaction, one `user.updated` row with what changed.
 */
export async function updateUser(ctx: AdminContext, username: string, patch: UserPatch): Promise<UserResource> {
  const claims: ClaimsPatch = { ...patch.claims };
  if (patch.name !== undefined) claims.name = patch.name;
  if (patch.email !== undefined) claims.email = patch.email;
  if (patch.password !== undefined) {
    checkPassword(patch.password);
  }
  // Hashed before the transaction opens (the claims are checked whole inside it, before anything is written).
  const hash =
    patch.password === undefined ? undefined : await hashPassword(patch.password, passwordHashParams(ctx.config.passwordHashCost));
  const store = ctx.store;
  const outcome = await store.changes(async () => {
    const before = await findUser(store, username);
    const was = await userResource(store, before);
    if (Object.keys(claims).length > 0) await updateUserClaims(store, before.username, claims, ctx.now);
    if (patch.admin !== undefined && patch.admin !== was.admin) await store.users.setAdmin(before.id, patch.admin);
    if (patch.disabled !== undefined && patch.disabled !== was.disabled) {
      await store.users.setDisabled(before.username, patch.disabled ? ctx.now : null);
    }
    const sessionsEnded = hash === undefined ? [] : await store.users.resetPassword(before.id, hash);
    if (hash !== undefined) await clearFailedSignIns(store, before.username);
    const row = (await store.users.findById(before.id))!;
    const after = await userResource(store, row);
    // The resource's fields, then every other claim that changed (a phone number, an address).
    const claimChanges = changedFields(claimsOf(before) as Record<string, unknown>, claimsOf(row) as Record<string, unknown>);
    const detail: Record<string, unknown> = { ...claimChanges, ...changedFields(audible(was), audible(after)) };
    if (hash !== undefined) detail.password = 'changed';
    if (Object.keys(detail).length > 0) await audited(ctx, { action: 'user.updated', target: target(before), detail });
    const holders = patch.disabled === true && !was.disabled ? await store.grants.holders(before.id, ctx.now) : [];
    return { after, userId: before.id, sessionsEnded, holders };
  });
  if (outcome.holders.length + outcome.sessionsEnded.length > 0) {
    await ctx.logout((b) => b.accessEnded(outcome.userId, outcome.holders, outcome.sessionsEnded));
  }
  return outcome.after;
}

/**
 * The operator's password reset (`users reset-password`): the new password, the user's sessions ended, their
 * failed sign-in counters cleared, and with `revokeTokens` every application's access ended too.
 */
export async function resetPassword(
  ctx: AdminContext,
  username: string,
  password: string,
  options: { revokeTokens: boolean },
): Promise<{ username: string; sessionsEnded: number; countersCleared: number; grantsRevoked: number }> {
  checkPassword(password);
  const passwordHash = await hashPassword(password, passwordHashParams(ctx.config.passwordHashCost));
  const reset = await ctx.store.changes(async () => {
    const r = await resetUserPassword(ctx.store, username, password, { revokeTokens: options.revokeTokens, now: ctx.now, passwordHash });
    const cleared = await clearFailedSignIns(ctx.store, r.username);
    await audited(ctx, {
      action: 'user.password_reset',
      target: { type: 'user', id: r.userId, name: r.username },
      detail: { sessions_ended: r.sessionsEnded.length, applications_signed_out: options.revokeTokens ? r.grantsRevoked : 0 },
    });
    return { ...r, cleared };
  });
  if (reset.sessionsEnded.length + reset.holders.length > 0) {
    await ctx.logout((b) =>
      options.revokeTokens
        ? b.accessEnded(reset.userId, reset.holders, reset.sessionsEnded)
        : b.sessionsEnded(reset.userId, reset.sessionsEnded),
    );
  }
  return {
    username: reset.username,
    sessionsEnded: reset.sessionsEnded.length,
    countersCleared: reset.cleared,
    grantsRevoked: reset.grantsRevoked,
  };
}

/** Clears the failed sign-in counters of `username` (every address): a lockout earned against the old password. */
async function clearFailedSignIns(store: Store, username: string): Promise<number> {
  return store.rateLimits.delete(
    accountCounterKeys(
      (await store.rateLimits.list()).map((r) => r.key),
      username,
    ),
  );
}

/**
 * Deletes a user with everything that is theirs (sessions, grants and their tokens, passkeys, links to
 * connectors); the applications they registered stay, as the operator's. Applications holding their
 * sign-ins are told.
 */
export async function deleteUser(ctx: AdminContext, username: string): Promise<void> {
  const gone = await ctx.store.changes(async () => {
    const user = await findUser(ctx.store, username);
    const holders = await ctx.store.grants.holders(user.id, ctx.now);
    const was = await userResource(ctx.store, user);
    await ctx.store.users.delete(user.id);
    await audited(ctx, { action: 'user.deleted', target: target(user), detail: audible(was) });
    return { userId: user.id, holders };
  });
  if (gone.holders.length > 0) await ctx.logout((b) => b.accessEnded(gone.userId, gone.holders));
}

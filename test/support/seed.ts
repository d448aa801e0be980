/**
 * Users and applications for end-to-end tests, written straight into the store a server process uses, in this
 * process: what `authcli-server users add` and `apps add` do, through the same functions (addUser,
 * registerApplication), without a Node process per record. The tests about those commands run them for real.
 */
import { addUser, bootstrapStore, loadConfig, type NewAppInput, openStore, registerApplication, scryptParams } from '@authcli/server';

export interface SeedUser {
  username: string;
  password: string;
  admin?: boolean;
  name?: string;
  email?: string;
}

/** What `apps add` takes, with its defaults (public, scope "openid profile"). */
export type SeedApp = Partial<Omit<NewAppInput, 'clientId' | 'registrationTokenHash' | 'registrationMetadata'>> & { name: string };

type Env = { DATABASE_URL?: string | undefined };

/**
 * Opens the store of `env.DATABASE_URL` (a server process's env), migrated and bootstrapped the way every
 * operator command leaves it, runs `fn`, and closes it. The password-hash cost is the environment's, as for `users add`.
 */
async function withStore<T>(env: Env, fn: (store: Awaited<ReturnType<typeof openStore>>, cost: number) => Promise<T>): Promise<T> {
  const url = env.DATABASE_URL;
  if (!url) throw new Error('seed: the server env has no DATABASE_URL');
  const store = await openStore(url);
  try {
    await store.migrate();
    await bootstrapStore(store, Date.now());
    return await fn(store, loadConfig({ database: url }, process.env).passwordHashCost);
  } finally {
    await store.close();
  }
}

/** Adds users as `users add --password-stdin` does. */
export async function addUsers(env: Env, users: readonly SeedUser[]): Promise<void> {
  await withStore(env, async (store, cost) => {
    for (const u of users) {
      await addUser(
        store,
        { username: u.username, password: u.password, admin: u.admin ?? false, name: u.name ?? null, email: u.email ?? null },
        Date.now(),
        scryptParams(cost),
      );
    }
  });
}

/** Registers an application as `apps add --json` does; its client_id, and client_secret for a confidential one. */
export async function addApp(env: Env, app: SeedApp): Promise<{ client_id: string; client_secret?: string }> {
  return withStore(env, async (store) => {
    const { app: created, clientSecret } = await registerApplication(
      store,
      { kind: 'public', scopes: ['openid', 'profile'], callbackUrls: [], ...app } as NewAppInput,
      Date.now(),
    );
    return { client_id: created.clientId, ...(clientSecret && { client_secret: clientSecret }) };
  });
}

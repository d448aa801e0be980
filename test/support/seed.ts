/**
 * Users and applications for end-to-end tests, written straight into the store a server process uses, in this
 * process: what `authcli-server users add` and `apps add` do, through the same functions (addUser,
 * registerApplication), without a Node process per record. The tests about those commands run them for real.
 */
import { addUser, type NewAppInput, registerApplication, passwordHashParams, withStore } from '@authcli/server';

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

/** The store a server process uses (its env's DATABASE_URL), opened as an operator command opens it. */
function databaseOf(env: Env): string {
  if (!env.DATABASE_URL) throw new Error('seed: the server env has no DATABASE_URL');
  return env.DATABASE_URL;
}

/** Adds users as `users add --password-stdin` does. */
export async function addUsers(env: Env, users: readonly SeedUser[]): Promise<void> {
  await withStore(databaseOf(env), async (store, config) => {
    for (const u of users) {
      await addUser(
        store,
        { username: u.username, password: u.password, admin: u.admin ?? false, name: u.name ?? null, email: u.email ?? null },
        Date.now(),
        passwordHashParams(config.passwordHashCost),
      );
    }
  });
}

/** Registers an application as `apps add --json` does; its client_id, and client_secret for a confidential one. */
export async function addApp(env: Env, app: SeedApp): Promise<{ client_id: string; client_secret?: string }> {
  return withStore(databaseOf(env), async (store) => {
    const { app: created, clientSecret } = await registerApplication(
      store,
      { kind: 'public', scopes: ['openid', 'profile'], callbackUrls: [], ...app } as NewAppInput,
      Date.now(),
    );
    return { client_id: created.clientId, ...(clientSecret && { client_secret: clientSecret }) };
  });
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, Page } from 'playwright-core';
import { decodeJwt } from 'jose';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openStore } from '@authcli/server';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { approveAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';
import { dialects, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { Browser, hidden } from '@authcli/test-support/http';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/**
 * An OpenID Connect upstream (node-oidc-provider) behind authcli-server as a connector, in Chromium: a person
 * signs in there and comes back through our consent to an application's callback, as the same user every
 * time; the allowed email domain, a local account with the same email, a removed connector and an upstream
 * that is gone are answered as they should be.
 */
describe.each(dialects())('an OpenID Connect connector: node-oidc-provider as the upstream (%s)', (dialect) => {
  let server: ServerProcess;
  let db: TestDatabase;
  let upstream: Awaited<ReturnType<typeof startOtherProvider>>;
  let chromium: Chromium;
  let callbackServer: Server;
  let callback: string;
  let clientId: string;

  beforeAll(async () => {
    callbackServer = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
    callback = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/cb`;
    db = await freshDatabase(dialect);
    server = await startServerProcess({ database: db.url });
    upstream = await startOtherProvider({
      webClient: { clientId: 'authcli-corp', clientSecret: 'upstream secret 1', redirectUri: `${server.issuer}/connectors/corp/callback` },
    });
    const added = await serverCommand(
      [
        'connectors',
        'add',
        'oidc',
        '--id',
        'corp',
        '--name',
        'Corp SSO',
        '--issuer',
        upstream.issuer,
        '--client-id',
        'authcli-corp',
        '--client-secret-stdin',
        '--allowed-email-domain',
        'corp.example',
      ],
      server.env,
      'upstream secret 1\n',
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain(`its redirect URI, to register at the upstream: ${server.issuer}/connectors/corp/callback`);
    // A local account that has the same email as the upstream person: never the one signed in to.
    await addUsers(server.env, [{ username: 'ann', password: 'local password 1', email: 'ann@corp.example' }]);
    clientId = (await addApp(server.env, { name: 'Team App', kind: 'public', callbackUrls: [callback], scopes: ['openid', 'profile'] }))
      .client_id;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    callbackServer?.close();
    await chromium?.close();
    await upstream?.close();
    await server?.stop();
    await db?.cleanup();
  });

  /** The code flow of the application in a fresh browser, through "Continue with Corp SSO" as `login`. */
  async function signInThroughUpstream(login: string): Promise<{ page: Page; idToken?: Record<string, unknown> }> {
    const context = await chromium.newContext();
    const page = await context.newPage();
    const verifier = generateVerifier();
    await page.goto(
      `${server.issuer}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: callback,
        scope: 'openid profile',
        state: 'st',
        code_challenge: await challengeS256(verifier),
        code_challenge_method: 'S256',
      })}`,
    );
    await page.getByRole('link', { name: 'Continue with Corp SSO' }).click();
    await approveAtOtherProvider(page, login, () => page.url().startsWith(server.issuer));
    await page.waitForURL((url) => url.href.startsWith(server.issuer) || url.href.startsWith(callback));
    if (await page.getByRole('button', { name: 'Approve' }).count()) await page.getByRole('button', { name: 'Approve' }).click();
    if (!page.url().startsWith(callback)) {
      await page.waitForLoadState();
      if (!page.url().startsWith(callback)) return { page };
    }
    const code = new URL(page.url()).searchParams.get('code')!;
    const res = await fetch(`${server.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: callback,
        client_id: clientId,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    return { page, idToken: decodeJwt(((await res.json()) as { id_token: string }).id_token) };
  }

  it('"Continue with Corp SSO" signs a person in upstream and back through our consent; the same person gets the same sub again', async () => {
    const first = await signInThroughUpstream('ann@corp.example');
    expect(first.idToken).toMatchObject({ acr: 'urn:authcli:acr:federated' });
    const again = await signInThroughUpstream('ann@corp.example');
    expect(again.idToken!.sub).toBe(first.idToken!.sub);
    // Not the local ann, whose email is the same.
    const store = await openStore(server.env.DATABASE_URL!);
    try {
      const local = await store.users.findByUsername('ann');
      expect(first.idToken!.sub).not.toBe(local!.id);
      const federated = await store.users.findById(first.idToken!.sub as string);
      expect(federated!.username).toBe('ann-2');
      expect(await store.connectors.linksOf(federated!.id)).toEqual([{ connectorId: 'corp', subject: 'ann@corp.example' }]);
    } finally {
      await store.close();
    }
    const listed = await serverCommand(['connectors', 'list', '--json'], server.env);
    // Its people (the other tests here, in whatever order they ran, may have added theirs).
    const [corp] = JSON.parse(listed.stdout) as { users: number }[];
    expect(corp).toMatchObject({ id: 'corp', type: 'oidc', name: 'Corp SSO', upstream: upstream.issuer });
    expect(corp!.users).toBeGreaterThanOrEqual(1);
  });

  it('a local account links its upstream account on /account, then "Continue with" signs in to it; an upstream account that signs in someone else is not linked', async () => {
    await addUsers(server.env, [
      { username: 'lin', password: 'local password 2' },
      { username: 'lou', password: 'local password 3' },
    ]);
    const context = await chromium.newContext();
    const page = await context.newPage();
    const passwordSignIn = async (username: string, password: string) => {
      await page.goto(`${server.issuer}/signin`);
      await page.getByLabel('Username').fill(username);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL(`${server.issuer}/`);
    };
    await passwordSignIn('lin', 'local password 2');
    await page.goto(`${server.issuer}/account`);
    await page.getByRole('button', { name: 'Link Corp SSO' }).click();
    await approveAtOtherProvider(page, 'lin@corp.example', () => page.url().startsWith(server.issuer));
    await page.waitForURL(`${server.issuer}/account#connectors`);
    expect(await page.textContent('#connectors ~ ul')).toContain('Linked');
    await page.getByRole('button', { name: 'Sign out' }).click();
    // Through the upstream now: the local account it was linked to.
    await page.goto(`${server.issuer}/signin`);
    await page.getByRole('link', { name: 'Continue with Corp SSO' }).click();
    await approveAtOtherProvider(page, 'lin@corp.example', () => page.url().startsWith(server.issuer));
    await page.waitForURL(`${server.issuer}/`);
    await page.goto(`${server.issuer}/account`);
    expect(await page.locator('.who strong').textContent()).toBe('lin');
    await page.getByRole('button', { name: 'Sign out' }).click();
    // lou tries to link the upstream account that signs lin in: refused, nothing changes.
    await passwordSignIn('lou', 'local password 3');
    await page.goto(`${server.issuer}/account`);
    await page.getByRole('button', { name: 'Link Corp SSO' }).click();
    await approveAtOtherProvider(page, 'lin@corp.example', () => page.url().startsWith(server.issuer));
    await page.getByRole('heading', { name: 'Already linked' }).waitFor();
    await context.close();
  });

  it('a person outside the allowed email domain is refused with a page that says why', async () => {
    const { page, idToken } = await signInThroughUpstream('eve@evil.example');
    expect(idToken).toBeUndefined();
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    expect(await page.textContent('body')).toContain('only people with a verified email address at corp.example may sign in here');
    await page.screenshot({ path: screenshotPath('connector-refused') });
  });

  it('an answer that does not match a sign-in this browser started, or a forged state, is a page, not a sign-in', async () => {
    const res = await fetch(`${server.issuer}/connectors/corp/callback?code=x&state=forged`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('does not match a sign-in this browser started');
    const unknown = await fetch(`${server.issuer}/connectors/nope/start`, { redirect: 'manual' });
    expect(unknown.status).toBe(404);
  });
});

/**
 * authcli-server federating to another authcli-server: the upstream is this same software, so this shows it is
 * a standard relying party (discovery, PKCE, state, nonce, iss, ID token signature, userinfo) against itself.
 */
describe('an OpenID Connect connector: a second authcli-server as the upstream', () => {
  let upstream: ServerProcess;
  /** The upstream's issuer: on localhost, so that its cookies and the downstream's (on 127.0.0.1) stay apart in the browser. */
  let upstreamIssuer: string;
  let server: ServerProcess;
  let chromium: Chromium;

  beforeAll(async () => {
    server = await startServerProcess();
    upstream = await startServerProcess({ env: { AUTHCLI_ISSUER: 'http://localhost:{port}' } });
    upstreamIssuer = upstream.issuer.replace('127.0.0.1', 'localhost');
    await addUsers(upstream.env, [{ username: 'uma', password: 'upstream password 1', email: 'uma@team.example' }]);
    const app = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Downstream authcli',
        '--kind',
        'confidential',
        '--callback',
        `${server.issuer}/connectors/team/callback`,
        '--scope',
        'openid email profile',
        '--json',
      ],
      upstream.env,
    );
    expect(app.code, app.stderr).toBe(0);
    const { client_id, client_secret } = JSON.parse(app.stdout) as { client_id: string; client_secret: string };
    const added = await serverCommand(
      [
        'connectors',
        'add',
        'oidc',
        '--id',
        'team',
        '--name',
        'Team authcli',
        '--issuer',
        upstreamIssuer,
        '--client-id',
        client_id,
        '--client-secret-stdin',
      ],
      server.env,
      `${client_secret}\n`,
    );
    expect(added.code, added.stderr).toBe(0);
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
    await upstream?.stop();
  });

  it('"Continue with Team authcli": signed in with the upstream password and consent, provisioned with its email, the same user twice', async () => {
    const signInOnce = async () => {
      const context = await chromium.newContext();
      const page = await context.newPage();
      await page.goto(`${server.issuer}/signin`);
      await page.getByRole('link', { name: 'Continue with Team authcli' }).click();
      // At the upstream: its own sign-in and consent pages.
      await page.getByLabel('Username').fill('uma');
      await page.getByLabel('Password').fill('upstream password 1');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      // Its consent page the first time; the second time the upstream remembers the approval and comes straight back.
      await page.waitForURL((url) => url.href.startsWith(server.issuer) || url.pathname === '/oauth/authorize');
      if (!page.url().startsWith(server.issuer)) await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL(`${server.issuer}/`);
      await page.goto(`${server.issuer}/account`);
      const who = await page.locator('.who strong').textContent();
      await context.close();
      return who;
    };
    expect(await signInOnce()).toBe('uma');
    expect(await signInOnce()).toBe('uma');
    const store = await openStore(server.env.DATABASE_URL!);
    try {
      const uma = await store.users.findByUsername('uma');
      expect(uma?.claims).toContain('uma@team.example');
      expect(await store.connectors.linksOf(uma!.id)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it("through an application: our consent and the application's callback, with the upstream's pwd carried in amr", async () => {
    const cb = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => cb.listen(0, '127.0.0.1', r));
    const appCallback = `http://127.0.0.1:${(cb.address() as AddressInfo).port}/cb`;
    try {
      const appId = (await addApp(server.env, { name: 'Downstream App', kind: 'public', callbackUrls: [appCallback], scopes: ['openid'] }))
        .client_id;
      const verifier = generateVerifier();
      const context = await chromium.newContext();
      const page = await context.newPage();
      await page.goto(
        `${server.issuer}/oauth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: appId,
          redirect_uri: appCallback,
          scope: 'openid',
          state: 'st',
          code_challenge: await challengeS256(verifier),
          code_challenge_method: 'S256',
        })}`,
      );
      await page.getByRole('link', { name: 'Continue with Team authcli' }).click();
      await page.getByLabel('Username').fill('uma');
      await page.getByLabel('Password').fill('upstream password 1');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL((url) => url.href.startsWith(server.issuer) || url.pathname === '/oauth/authorize');
      if (!page.url().startsWith(server.issuer)) await page.getByRole('button', { name: 'Approve' }).click();
      // Our consent for the downstream application.
      await page.getByRole('heading', { name: /Downstream App/ }).waitFor();
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL((url) => url.href.startsWith(appCallback));
      const code = new URL(page.url()).searchParams.get('code')!;
      await context.close();
      const res = await fetch(`${server.issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: appCallback,
          client_id: appId,
          code_verifier: verifier,
        }),
      });
      expect(res.status).toBe(200);
      const idToken = decodeJwt(((await res.json()) as { id_token: string }).id_token);
      expect(idToken).toMatchObject({ acr: 'urn:authcli:acr:federated', amr: ['pwd'] });
    } finally {
      cb.close();
    }
  });
});

describe('authcli login through a connector', () => {
  it('`authcli login --browser`: the CLI signs in with the person signed in through node-oidc-provider', async () => {
    const server = await startServerProcess();
    const upstream = await startOtherProvider({
      webClient: { clientId: 'cli-corp', clientSecret: 'upstream secret 3', redirectUri: `${server.issuer}/connectors/corp/callback` },
    });
    const chromium = await launchChromium();
    try {
      const added = await serverCommand(
        [
          'connectors',
          'add',
          'oidc',
          '--id',
          'corp',
          '--name',
          'Corp SSO',
          '--issuer',
          upstream.issuer,
          '--client-id',
          'cli-corp',
          '--client-secret-stdin',
        ],
        server.env,
        'upstream secret 3\n',
      );
      expect(added.code, added.stderr).toBe(0);
      const env = { XDG_CONFIG_HOME: tempConfigHome(), AUTHCLI_ISSUER: server.issuer };
      const login = runCli(['login', '--browser', '--no-open'], env);
      const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
      const page = await (await chromium.newContext()).newPage();
      await page.goto(url!);
      await page.getByRole('link', { name: 'Continue with Corp SSO' }).click();
      await approveAtOtherProvider(page, 'cli@corp.example', () => page.url().startsWith(server.issuer));
      await page.getByRole('button', { name: 'Approve' }).click();
      const done = await login.exit;
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toBe(`Signed in to ${server.issuer} as cli.\n`);
      const status = await runCli(['status', '--json'], env).exit;
      expect(JSON.parse(status.stdout)).toMatchObject({ signed_in: true, username: 'cli' });
    } finally {
      await chromium.close();
      await upstream.close();
      await server.stop();
    }
  });
});

describe('an OpenID Connect connector whose upstream is gone', () => {
  it('"Continue with" answers a page that says so, within the connector timeout, and local sign-in goes on; removed, its button goes', async () => {
    const server = await startServerProcess();
    const upstream = await startOtherProvider({
      webClient: { clientId: 'gone', clientSecret: 'upstream secret 2', redirectUri: `${server.issuer}/connectors/gone/callback` },
    });
    try {
      const added = await serverCommand(
        [
          'connectors',
          'add',
          'oidc',
          '--id',
          'gone',
          '--name',
          'Gone SSO',
          '--issuer',
          upstream.issuer,
          '--client-id',
          'gone',
          '--client-secret-stdin',
        ],
        server.env,
        'upstream secret 2\n',
      );
      expect(added.code, added.stderr).toBe(0);
      await addUsers(server.env, [{ username: 'local', password: 'local password 1' }]);
      await upstream.close();
      const started = performance.now();
      const res = await fetch(`${server.issuer}/connectors/gone/start`, { redirect: 'manual' });
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('Gone SSO cannot be used right now');
      expect(performance.now() - started).toBeLessThan(15_000);
      const b = new Browser(server.issuer);
      const page = await b.get('/signin');
      expect(page.text).toContain('Continue with Gone SSO');
      expect(
        (await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'local', password: 'local password 1' })).status,
      ).toBe(303);
      // Removed: its button goes, and a second removal says there is none.
      expect(await serverCommand(['connectors', 'remove', 'gone', '--yes'], server.env)).toMatchObject({ code: 0 });
      expect(await (await fetch(`${server.issuer}/signin`)).text()).not.toContain('Continue with Gone SSO');
      const again = await serverCommand(['connectors', 'remove', 'gone', '--yes'], server.env);
      expect(again.code).not.toBe(0);
      expect(again.stderr.trim()).toBe('authcli-server: no connector gone (see connectors list)');
    } finally {
      await server.stop();
    }
  });
});

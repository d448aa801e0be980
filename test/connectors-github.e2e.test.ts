import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '@authcli/server';
import { dialects, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { Browser } from '@authcli/test-support/http';
import { type GithubStandin, startGithubStandin } from '@authcli/test-support/github-standin';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/**
 * The GitHub connector in a real authcli-server, against a stand-in that speaks GitHub's documented endpoints
 * (github.com cannot be reached from the test machine; test/support/github-standin.ts names the pages it
 * follows): a member of the organization signs in as the same user after renaming their login, a
 * non-member is refused, and a GitHub that declines (Cancel) or is down is a page.
 */
describe.each(dialects())('a GitHub connector: the stand-in as GitHub Enterprise (%s)', (dialect) => {
  let server: ServerProcess;
  let github: GithubStandin;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await freshDatabase(dialect);
    server = await startServerProcess({ database: db.url });
    github = await startGithubStandin({
      callbackUrl: `${server.issuer}/connectors/gh/callback`,
      users: [
        {
          id: 4242,
          login: 'octo',
          name: 'Octo Cat',
          emails: [{ email: 'octo@team.example', primary: true, verified: true }],
          orgs: [{ org: 'team' }],
        },
        { id: 5151, login: 'stranger', emails: [{ email: 'stranger@example.com', primary: true, verified: true }] },
      ],
    });
    const added = await serverCommand(
      [
        'connectors',
        'add',
        'github',
        '--id',
        'gh',
        '--name',
        'GitHub',
        '--client-id',
        github.clientId,
        '--client-secret-stdin',
        '--org',
        'team',
        '--api-base',
        github.apiBase,
      ],
      server.env,
      `${github.clientSecret}\n`,
    );
    expect(added.code, added.stderr).toBe(0);
  });
  afterAll(async () => {
    await github?.close();
    await server?.stop();
    await db?.cleanup();
  });

  /** "Continue with GitHub" as `userId`, hop by hop: our start, GitHub's authorize, our callback. */
  async function continueWithGithub(userId: number, opts: { deny?: boolean } = {}) {
    github.signIn(userId, opts);
    const b = new Browser(server.issuer);
    const start = await b.get('/connectors/gh/start');
    expect(start.status).toBe(303);
    const back = await github.authorize(start.location!);
    const answer = await b.get(back.href);
    return { b, answer };
  }
  const whoIs = async (b: Browser) => /Signed in as <strong>([^<]+)</.exec((await b.get('/account')).text)?.[1];

  it('a member of the organization signs in, and as the same user after renaming the login', async () => {
    const first = await continueWithGithub(4242);
    expect(first.answer.status).toBe(303);
    expect(await whoIs(first.b)).toBe('octo');
    github.users.get(4242)!.login = 'octo-renamed';
    const again = await continueWithGithub(4242);
    expect(await whoIs(again.b)).toBe('octo');
    const store = await openStore(db.url);
    try {
      const octo = await store.users.findByUsername('octo');
      expect(await store.connectors.linksOf(octo!.id)).toEqual([{ connectorId: 'gh', subject: '4242' }]);
    } finally {
      await store.close();
    }
  });

  it('outside the organization: refused with a page that says why; Cancel at GitHub: declined; GitHub down: unavailable', async () => {
    const outside = await continueWithGithub(5151);
    expect(outside.answer.status).toBe(403);
    expect(outside.answer.text).toContain('Not allowed');
    expect(await whoIs(outside.b)).toBeUndefined();
    const cancelled = await continueWithGithub(4242, { deny: true });
    expect(cancelled.answer.status).toBe(403);
    expect(cancelled.answer.text).toContain('The sign-in was declined at GitHub.');
    github.fault('access_token', 'error500');
    try {
      const down = await continueWithGithub(4242);
      expect(down.answer.status).toBe(503);
      expect(down.answer.text).toContain('GitHub cannot be used right now');
    } finally {
      github.fault('access_token', undefined);
    }
  });
});

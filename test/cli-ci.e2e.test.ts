import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CiIssuer, ciIssuer, MAIN_BRANCH_SUBJECT } from '@authcli/test-support/ci-issuer';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { expireStoredToken } from '@authcli/test-support/credentials';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const TE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const API = 'https://deploy.example.com';

/**
 * `authcli login --ci` in a simulated GitHub Actions job: the runner's ID-token request (a stand-in issuer on a
 * loopback port, test/support/ci-issuer.ts), a trust policy added with `workloads add`, and the CLI's token
 * exchange; and a GitLab-style job with the token in an environment variable.
 */
describe('authcli login --ci: a CI job signed in without a secret (RFC 8693)', () => {
  let server: ServerProcess;
  let ci: CiIssuer;
  let clientId: string;

  beforeAll(async () => {
    server = await startServerProcess();
    ci = await ciIssuer({ audience: server.issuer });
    const run = async (...args: string[]) => {
      const r = await serverCommand(args, server.env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    await run('resources', 'add', '--id', API, '--name', 'Deploy API', '--scope', 'deploy:write=Deploy');
    clientId = (
      JSON.parse(await run('apps', 'add', '--name', 'CI', '--kind', 'public', '--grant', TE, '--scope', 'deploy:write', '--json')) as {
        client_id: string;
      }
    ).client_id;
    await run(
      'workloads',
      'add',
      '--id',
      'deploy-main',
      '--issuer',
      ci.issuer,
      '--audience',
      server.issuer,
      '--subject',
      MAIN_BRANCH_SUBJECT,
      '--claim',
      'repository_owner=acme',
      '--app',
      clientId,
      '--scope',
      'deploy:write',
      '--token-lifetime',
      '5m',
    );
  });
  afterAll(async () => {
    await ci?.close();
    await server?.stop();
  });

  const jobEnv = (home: string, extra: Record<string, string> = {}) => ({
    XDG_CONFIG_HOME: home,
    AUTHCLI_ISSUER: server.issuer,
    AUTHCLI_CLIENT_ID: clientId,
    ...extra,
  });

  it('GitHub Actions: login --ci asks the runner for the job token, exchanges it; token re-exchanges near expiry, four processes once', async () => {
    const home = tempConfigHome();
    const env = jobEnv(home, ci.actionsEnv);
    const before = ci.idTokenRequests();
    const login = await runCli(['login', '--ci', '--resource', API, '--json'], env).exit;
    expect(login.code, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toMatchObject({ kind: 'workload', subject: MAIN_BRANCH_SUBJECT, scope: 'deploy:write' });
    expect(ci.idTokenRequests()).toBe(before + 1);
    const token = (await runCli(['token'], env).exit).stdout.trim();
    expect(decodeJwt(token)).toMatchObject({ sub: MAIN_BRANCH_SUBJECT, aud: API, client_id: clientId, workload: 'deploy-main' });
    const status = await runCli(['status'], env).exit;
    expect(status.stdout).toContain(`as the CI workload ${MAIN_BRANCH_SUBJECT}`);

    expireStoredToken(home, server.issuer);
    const runs = await Promise.all(Array.from({ length: 4 }, () => runCli(['token'], env).exit));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    expect(new Set(runs.map((r) => r.stdout.trim())).size).toBe(1);
    expect(runs[0]!.stdout.trim()).not.toBe(token);
    expect(ci.idTokenRequests()).toBe(before + 2);
  });

  it('GitLab-style: the token in a variable (--ci-token-env); exchanged once, a second login with it is refused', async () => {
    const home = tempConfigHome();
    const jobToken = await ci.token(Date.now(), { aud: server.issuer });
    const env = jobEnv(home, { AUTHCLI_ID_TOKEN: jobToken });
    const login = await runCli(['login', '--ci', '--ci-token-env', 'AUTHCLI_ID_TOKEN'], env).exit;
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`as the CI workload ${MAIN_BRANCH_SUBJECT}`);
    expect(decodeJwt((await runCli(['token'], env).exit).stdout.trim())).toMatchObject({ aud: API });
    // The variable's token was exchanged at login: once expired, the sign-in says so instead of replaying it.
    expireStoredToken(home, server.issuer);
    const expired = await runCli(['token'], env).exit;
    expect(expired.code).toBe(1);
    expect(expired.stderr).toContain('AUTHCLI_ID_TOKEN was exchanged when the job signed in');
    expect(JSON.parse((await runCli(['status', '--json'], env).exit).stdout)).toMatchObject({ state: 'expired', refreshable: false });
    const again = await runCli(
      ['login', '--ci', '--ci-token-env', 'AUTHCLI_ID_TOKEN', '--force'],
      jobEnv(tempConfigHome(), { AUTHCLI_ID_TOKEN: jobToken }),
    ).exit;
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already exchanged');
  });

  it('refused: a pull_request job, no CI token at all, an empty variable', async () => {
    const pr = await ci.token(Date.now(), { aud: server.issuer, sub: 'repo:acme/deploy:pull_request', event_name: 'pull_request' });
    const refused = await runCli(['login', '--ci', '--ci-token-env', 'PR_TOKEN'], jobEnv(tempConfigHome(), { PR_TOKEN: pr })).exit;
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('matches no trust policy');
    const none = await runCli(['login', '--ci'], jobEnv(tempConfigHome())).exit;
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('permissions: id-token: write');
    const empty = await runCli(['login', '--ci', '--ci-token-env', 'NOTHING'], jobEnv(tempConfigHome())).exit;
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('NOTHING holds no CI token');
  });
});

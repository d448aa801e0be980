/**
 * A stand-in for a CI provider's OIDC token issuer on a loopback port, written from GitHub Actions' documentation:
 * discovery, a JWKS with one RS256 key, tokens with the claims GitHub documents (sub, repository,
 * repository_owner, ref, event_name, jti ...), and the runner's ID-token request (`ACTIONS_ID_TOKEN_REQUEST_URL`
 * with `audience`, answered `{"value"}` to `Authorization: Bearer ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** The `sub` of a push to main of acme/deploy, as GitHub Actions writes it. */
export const MAIN_BRANCH_SUBJECT = 'repo:acme/deploy:ref:refs/heads/main';

export interface CiIssuer {
  readonly issuer: string;
  readonly publicJwk: JWK;
  /** Requests the issuer got, of any kind. */
  requests(): number;
  /** ID-token requests the runner endpoint answered. */
  idTokenRequests(): number;
  /** What a job's step gets in its environment to ask for its token (GitHub Actions). */
  readonly actionsEnv: { ACTIONS_ID_TOKEN_REQUEST_URL: string; ACTIONS_ID_TOKEN_REQUEST_TOKEN: string };
  /** A job's token at `nowMs` for `audience`, with GitHub's claims; `claims` replaces any; signed by `key` (default: the issuer's). */
  token(nowMs: number, claims?: Record<string, unknown>, key?: CryptoKey, kid?: string): Promise<string>;
  close(): Promise<void>;
}

export async function ciIssuer(options: { audience?: string; claims?: Record<string, unknown> } = {}): Promise<CiIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'gh-1', alg: 'RS256', use: 'sig' };
  const requestToken = randomBytes(16).toString('hex');
  let requests = 0;
  let idTokenRequests = 0;
  let issuer = '';
  const sign = (nowMs: number, claims: Record<string, unknown> = {}, key: CryptoKey = privateKey, kid = 'gh-1') => {
    const now = Math.floor(nowMs / 1000);
    return new SignJWT({
      iss: issuer,
      aud: options.audience ?? 'https://authcli.example/ci',
      sub: MAIN_BRANCH_SUBJECT,
      repository: 'acme/deploy',
      repository_owner: 'acme',
      ref: 'refs/heads/main',
      event_name: 'push',
      jti: randomUUID(),
      iat: now,
      nbf: now,
      exp: now + 300,
      ...options.claims,
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .sign(key);
  };
  const server: Server = createServer(async (req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', issuer);
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/.well-known/openid-configuration') return json(200, { issuer, jwks_uri: `${issuer}/jwks` });
    if (url.pathname === '/jwks') return json(200, { keys: [publicJwk] });
    if (url.pathname === '/actions/token') {
      if (req.headers.authorization !== `Bearer ${requestToken}`) return json(401, { message: 'bad request token' });
      idTokenRequests++;
      const audience = url.searchParams.get('audience');
      return json(200, { value: await sign(Date.now(), audience ? { aud: audience } : {}) });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    issuer,
    publicJwk,
    requests: () => requests,
    idTokenRequests: () => idTokenRequests,
    actionsEnv: { ACTIONS_ID_TOKEN_REQUEST_URL: `${issuer}/actions/token?api-version=2.0`, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken },
    token: sign,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

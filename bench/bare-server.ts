// Baselines on the same machine, same Node, same run:
//   GET /bare  a bare Fastify route;
//   GET /sign  a Fastify route that does nothing but one RS256 ID-token signature
//              through the same node:crypto thread-pool path as the server's KeyRing;
//   POST /oauth/token  a Fastify route that reads a form body and answers what a pending
//              device poll gets (400 authorization_pending, the same headers), with nothing behind it: the
//              polls' load shape (a distinct body per request) against a bare route.
import Fastify from 'fastify';
import { generateKeyPairSync, sign } from 'node:crypto';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
let n = 0;

const app = Fastify({ logger: false });
app.get('/bare', async () => ({ ok: true }));
app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, body));
app.post('/oauth/token', async (_req, reply) =>
  reply
    .code(400)
    .headers({ 'access-control-allow-origin': '*', 'cache-control': 'no-store', pragma: 'no-cache', 'x-content-type-options': 'nosniff' })
    .send({ error: 'authorization_pending', error_description: 'the user has not yet approved the request' }),
);
app.get('/sign', async () => {
  const input = `${b64({ alg: 'RS256', typ: 'JWT', kid: 'k' })}.${b64({
    iss: 'http://127.0.0.1:8080',
    sub: 'b3c6c8a4-0f34-4c43-9d7c-6f8d1b2a9e11',
    aud: 'authcli',
    azp: 'authcli',
    exp: 1_800_000_000 + n++,
    iat: 1_700_000_000,
    auth_time: 1_700_000_000,
    nonce: 'n'.repeat(43),
    at_hash: 'h'.repeat(22),
  })}`;
  const sig = await new Promise<Buffer>((res, rej) => sign('sha256', Buffer.from(input), privateKey, (e, s) => (e ? rej(e) : res(s))));
  return { id_token: `${input}.${sig.toString('base64url')}` };
});
const port = Number(process.argv[2] ?? 0);
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`ready ${(app.server.address() as { port: number }).port}\n`);

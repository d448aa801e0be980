// The ceiling for the code exchange: how many RS256 ID-token signatures one
// Node process produces when it does nothing else, through the same
// node:crypto path the server uses. Printed as JSON on stdout.
import { generateKeyPairSync, sign } from 'node:crypto';

const seconds = Number(process.argv[2] ?? 5);
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const input = (i: number) =>
  Buffer.from(
    `${b64({ alg: 'RS256', typ: 'JWT', kid: 'k' })}.${b64({
      iss: 'http://127.0.0.1:8080',
      sub: 'b3c6c8a4-0f34-4c43-9d7c-6f8d1b2a9e11',
      aud: 'authcli',
      azp: 'authcli',
      exp: 1_800_000_000 + i,
      iat: 1_700_000_000,
      auth_time: 1_700_000_000,
      nonce: 'n'.repeat(43),
      at_hash: 'h'.repeat(22),
    })}`,
  );

// Sequential, on the main thread: the per-signature cost.
let n = 0;
let t0 = process.hrtime.bigint();
const end1 = Date.now() + (seconds * 1000) / 2;
while (Date.now() < end1) {
  sign('sha256', input(n), privateKey);
  n++;
}
const sequential = n / (Number(process.hrtime.bigint() - t0) / 1e9);

// Pooled: the async one-shot sign() the server uses, kept saturated.
n = 0;
t0 = process.hrtime.bigint();
const end2 = Date.now() + (seconds * 1000) / 2;
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (Date.now() < end2) {
      await new Promise<void>((res, rej) => sign('sha256', input(n), privateKey, (e) => (e ? rej(e) : res())));
      n++;
    }
  }),
);
const pooled = n / (Number(process.hrtime.bigint() - t0) / 1e9);
process.stdout.write(`${JSON.stringify({ sequential, pooled })}\n`);

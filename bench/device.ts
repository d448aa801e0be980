// Device-flow scenarios for `pnpm bench`.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapStore, openStore, type DeviceAuthorization, type DevicePollSummary, type Store } from '@authcli/server';
import { distinctPosts, repeated, type LoadFigures } from './load.js';

const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

/** A distinct user code per index (bench rows only; the server draws them at random). */
function userCodeFor(i: number): string {
  let s = '';
  for (let k = 0; k < 8; k++) {
    s += ALPHABET[i % 20];
    i = Math.floor(i / 20);
  }
  return s;
}

/** The server's default device-code lifetime and polling interval (config/defaults.ts), which the bench server runs with. */
const DEVICE_CODE_TTL_SECONDS = 600;
const DEVICE_POLL_INTERVAL_SECONDS = 5;

/** The row the device authorization endpoint writes for one pending request (RFC 8628 §3.2). */
function pendingRow(i: number, deviceCode: string, now: number): DeviceAuthorization {
  return {
    device_code_hash: createHash('sha256').update(deviceCode).digest('hex'),
    user_code: userCodeFor(i),
    client_id: 'authcli',
    scope: 'openid profile offline_access',
    status: 'pending',
    user_id: null,
    auth_time: null,
    amr: null,
    acr: null,
    created_at: now,
    expires_at: now + DEVICE_CODE_TTL_SECONDS * 1000,
    interval_s: DEVICE_POLL_INTERVAL_SECONDS,
    last_poll_at: null,
    last_poll_slowed: 0,
    grant_id: null,
    client_ip: '127.0.0.1',
    resource: null,
  };
}

/** Inserts `n` pending device authorizations through the store's bulk insert; returns their device codes. */
export async function seedPending(store: Store, n: number, offset = 0): Promise<string[]> {
  const now = Date.now();
  const codes: string[] = [];
  const rows: DeviceAuthorization[] = [];
  for (let i = 0; i < n; i++) {
    const code = randomBytes(32).toString('base64url');
    codes.push(code);
    rows.push(pendingRow(offset + i, code, now));
  }
  await store.deviceGrants.insertMany(rows);
  return codes;
}

/** The form body of one device-code poll by the built-in public client. */
export function pollBody(deviceCode: string): string {
  return `grant_type=${encodeURIComponent(DEVICE)}&client_id=authcli&device_code=${deviceCode}`;
}

/**
 * Polls pending device codes round-robin: with M codes at R polls/s each code
 * comes back every M/R seconds, so M is chosen well above 5·R and every poll
 * is on time. Every answer must be authorization_pending (anything else is
 * counted in `mismatches`).
 */
export async function pollPending(issuer: string, codes: string[], seconds: number, connections: number) {
  const figures = await distinctPosts({
    url: `${issuer}/oauth/token`,
    connections,
    seconds,
    bodies: codes.map(pollBody),
    verify: (body) => String(body).includes('"error":"authorization_pending"'),
  });
  return { figures, cycleSeconds: codes.length / figures.rps };
}

/**
 * What the store says about the polls: device authorizations whose interval
 * grew past the first one (each such growth is a slow_down answer), and how
 * many were polled. The bench server runs with the default interval, the one
 * the seeded rows have.
 */
export async function pollOutcome(store: Store): Promise<DevicePollSummary> {
  return store.deviceGrants.pollSummary(DEVICE_POLL_INTERVAL_SECONDS);
}

/**
 * The same server's token endpoint answering without the store: an
 * unsupported grant_type goes through the same HTTP stack, form parsing and
 * error answer (same headers) as a pending poll, and stops there.
 */
export async function storelessTokenAnswers(issuer: string, seconds: number, connections: number): Promise<LoadFigures> {
  return repeated({
    url: `${issuer}/oauth/token`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=urn%3Aexample%3Anone&client_id=authcli&device_code=x',
    verifyBody: (body) => String(body).includes('"error":"unsupported_grant_type"'),
  });
}

/** POST /oauth/device/authorization for the built-in public client. */
export async function deviceAuthorizations(issuer: string, seconds: number, connections: number): Promise<LoadFigures> {
  return repeated({
    url: `${issuer}/oauth/device/authorization`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'client_id=authcli&scope=openid%20profile%20offline_access',
  });
}

/**
 * Bytes the embedded store spends per pending device authorization: 100,000
 * rows as the endpoint writes them (with their indexes), file growth after a
 * checkpoint, divided by the count.
 */
export async function bytesPerPending(n = 100_000): Promise<{ bytesPerRow: number; fileBytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-bytes-'));
  const file = join(dir, 'size.db');
  const store = await openStore(file);
  try {
    await store.migrate();
    await bootstrapStore(store, Date.now());
    const size = async () => {
      await store.checkpoint();
      return statSync(file).size;
    };
    const before = await size();
    await seedPending(store, n);
    const after = await size();
    return { bytesPerRow: (after - before) / n, fileBytes: after };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

import { describe, expect, it } from 'vitest';
import { serverCommand } from '@authcli/test-support/server-process';

interface Entry {
  name: string;
  value: string;
  source: string;
}

/** Every variable `config` reads, unset, so that the process's own environment cannot change what the test sees. */
const CLEAN: NodeJS.ProcessEnv = Object.fromEntries(
  [
    'AUTHCLI_ISSUER',
    'HOST',
    'PORT',
    'DATABASE_URL',
    'LOG_LEVEL',
    'AUTHCLI_KEY_ENCRYPTION_KEY',
    'AUTHCLI_KEY_ENCRYPTION_KEY_FILE',
    'AUTHCLI_TRUST_PROXY',
    'AUTHCLI_ACCESS_TOKEN_TTL',
    'AUTHCLI_REFRESH_TOKEN_TTL',
    'AUTHCLI_ID_TOKEN_TTL',
    'AUTHCLI_SESSION_TTL',
    'AUTHCLI_ACCESS_TOKEN_ALG',
    'AUTHCLI_DEVICE_CODE_TTL',
    'AUTHCLI_DEVICE_POLL_INTERVAL',
    'AUTHCLI_BODY_LIMIT',
    'AUTHCLI_HEADERS_TIMEOUT',
    'AUTHCLI_REQUEST_TIMEOUT',
    'AUTHCLI_KEEPALIVE_TIMEOUT',
    'AUTHCLI_MAX_CONNECTIONS',
    'AUTHCLI_DB_TIMEOUT',
    'AUTHCLI_SHUTDOWN_GRACE',
    'AUTHCLI_PASSWORD_HASH_THREADS',
    'AUTHCLI_PASSWORD_HASH_COST',
    'AUTHCLI_SHUTDOWN_DRAIN',
    'AUTHCLI_LIMITS',
    'AUTHCLI_REGISTRATION',
    'AUTHCLI_METRICS_PORT',
    'AUTHCLI_METRICS_HOST',
  ].map((k) => [k, undefined]),
);

async function config(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Map<string, Entry>> {
  const r = await serverCommand(['config', '--json', ...args], { ...CLEAN, ...env });
  expect(r.code, r.stderr).toBe(0);
  return new Map((JSON.parse(r.stdout) as Entry[]).map((e) => [e.name, e]));
}

describe('authcli-server config: the effective settings and where each came from', () => {
  it('with nothing set, every value is a default or built-in, and the issuer follows host and port', async () => {
    const c = await config([]);
    expect(c.get('issuer')).toEqual({
      name: 'issuer',
      value: 'http://localhost:8080',
      source: 'default (from host and port)',
    });
    expect(c.get('port')).toMatchObject({ value: '8080', source: 'default' });
    expect(c.get('database')).toMatchObject({ value: './data/authcli.db', source: 'default' });
    expect(c.get('authorization_code_ttl')).toMatchObject({ value: '60 s', source: 'built-in' });
    expect(c.get('device_code_ttl')).toMatchObject({ value: '600 s', source: 'default' });
    expect(c.get('device_poll_interval')).toMatchObject({ value: '5 s', source: 'default' });
    expect(c.get('key_encryption_key')).toMatchObject({ source: 'not configured' });
    expect(c.get('limit.signin-account-ip')).toMatchObject({ value: '10/15m', source: 'default' });
    expect(c.get('registration')).toMatchObject({ value: 'off (no registration endpoint)', source: 'default' });
    expect(c.get('limit.registration-ip')).toMatchObject({ value: '20/1h', source: 'default' });
    expect(c.get('initial_access_token_ttl')).toMatchObject({ value: '86400 s (--expires-in)', source: 'built-in' });
    expect(c.get('metrics_port')).toMatchObject({ value: 'off (GET /metrics not served)', source: 'default' });
    expect(c.get('metrics_host')).toMatchObject({ value: '127.0.0.1', source: 'default' });
    expect(c.get('argon2id')).toMatchObject({ value: 'm=65536 t=3 p=1', source: 'default' });
    for (const e of c.values()) expect(e.source, e.name).toMatch(/^(default|built-in|not configured)/);
  });

  it('a flag wins over the environment, which wins over the default', async () => {
    const c = await config(['--port', '9002', '--issuer', 'https://id.example/'], {
      PORT: '9001',
      HOST: '127.0.0.2',
      AUTHCLI_ISSUER: 'https://other.example',
      AUTHCLI_DEVICE_POLL_INTERVAL: '7',
      AUTHCLI_LIMITS: 'signin-ip=5/1m',
      AUTHCLI_PASSWORD_HASH_COST: '12',
    });
    expect(c.get('argon2id')).toMatchObject({ value: 'm=4096 t=3 p=1', source: 'env AUTHCLI_PASSWORD_HASH_COST' });
    expect(c.get('port')).toMatchObject({ value: '9002', source: 'flag --port' });
    expect(c.get('host')).toMatchObject({ value: '127.0.0.2', source: 'env HOST' });
    expect(c.get('issuer')).toMatchObject({ value: 'https://id.example', source: 'flag --issuer' });
    expect(c.get('device_poll_interval')).toMatchObject({ value: '7 s', source: 'env AUTHCLI_DEVICE_POLL_INTERVAL' });
    expect(c.get('limit.signin-ip')).toMatchObject({ value: '5/1m', source: 'env AUTHCLI_LIMITS' });
    expect(c.get('limit.signin-account-ip')).toMatchObject({ source: 'default' });
  });

  it('the metrics listener: off by default, on with a port from a flag or the environment', async () => {
    const flagged = await config(['--metrics-port', '9464'], { AUTHCLI_METRICS_PORT: '9465', AUTHCLI_METRICS_HOST: '10.0.0.5' });
    expect(flagged.get('metrics_port')).toMatchObject({ value: '9464', source: 'flag --metrics-port' });
    expect(flagged.get('metrics_host')).toMatchObject({ value: '10.0.0.5', source: 'env AUTHCLI_METRICS_HOST' });
    const fromEnv = await config(['--metrics-host', '::1'], { AUTHCLI_METRICS_PORT: '9465' });
    expect(fromEnv.get('metrics_port')).toMatchObject({ value: '9465', source: 'env AUTHCLI_METRICS_PORT' });
    expect(fromEnv.get('metrics_host')).toMatchObject({ value: '::1', source: 'flag --metrics-host' });
  });

  it('secrets are never printed: the database password is masked, the key-encryption key only said to be set', async () => {
    const kek = Buffer.alloc(32, 7).toString('base64url');
    const r = await serverCommand(['config'], {
      ...CLEAN,
      DATABASE_URL: 'postgres://authcli:s3cr3t-pw@db.internal:5432/authcli',
      AUTHCLI_KEY_ENCRYPTION_KEY: kek,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('s3cr3t-pw');
    expect(r.stdout).not.toContain(kek);
    expect(r.stdout).toMatch(/^database\s+postgres:\/\/authcli:\*\*\*\*@db\.internal:5432\/authcli\s+env DATABASE_URL$/m);
    expect(r.stdout).toMatch(/^key_encryption_key\s+set \(private signing keys encrypted at rest\)\s+env AUTHCLI_KEY_ENCRYPTION_KEY$/m);
  });

  it('text output has a header row and one row per setting of the JSON output', async () => {
    const text = await serverCommand(['config'], CLEAN);
    expect(text.code, text.stderr).toBe(0);
    const [header, ...rows] = text.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^NAME\s+VALUE\s+SOURCE$/);
    const json = await config([]);
    expect(rows.map((r) => r.split(/\s{2,}/)[0])).toEqual([...json.keys()]);
  });

  it('AUTHCLI_REGISTRATION (RFC 7591): open or token from the environment; anything else is one line and exit 1', async () => {
    const open = await config([], { AUTHCLI_REGISTRATION: 'open', AUTHCLI_LIMITS: 'registration-ip=5/10m' });
    expect(open.get('registration')).toMatchObject({ value: expect.stringMatching(/^open /), source: 'env AUTHCLI_REGISTRATION' });
    expect(open.get('limit.registration-ip')).toMatchObject({ value: '5/10m', source: 'env AUTHCLI_LIMITS' });
    const token = await config([], { AUTHCLI_REGISTRATION: 'token' });
    expect(token.get('registration')?.value).toMatch(/^token \(an initial access token is required\)$/);
    const r = await serverCommand(['config'], { ...CLEAN, AUTHCLI_REGISTRATION: 'yes' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('authcli-server: AUTHCLI_REGISTRATION must be one of off, open, token, got "yes"\n');
  });

  it('AUTHCLI_REQUIRE_PAR (RFC 9126 §5): false by default, true or false from the environment; anything else is one line and exit 1', async () => {
    expect((await config([])).get('require_par')).toMatchObject({ value: expect.stringMatching(/^false /), source: 'default' });
    const on = await config([], { AUTHCLI_REQUIRE_PAR: 'TRUE' });
    expect(on.get('require_par')).toMatchObject({ value: expect.stringMatching(/^true /), source: 'env AUTHCLI_REQUIRE_PAR' });
    expect((await config([], { AUTHCLI_REQUIRE_PAR: '0' })).get('require_par')?.value).toMatch(/^false /);
    expect((await config([])).get('pushed_request_ttl')).toMatchObject({ value: '90 s', source: 'built-in' });
    const r = await serverCommand(['config'], { ...CLEAN, AUTHCLI_REQUIRE_PAR: 'maybe' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('authcli-server: AUTHCLI_REQUIRE_PAR must be true or false, got "maybe"\n');
  });

  it('a setting out of range is one line and exit 1, as at start', async () => {
    const r = await serverCommand(['config'], { ...CLEAN, AUTHCLI_ACCESS_TOKEN_TTL: '0' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('AUTHCLI_ACCESS_TOKEN_TTL must be a whole number from 1 to 86400, got "0"');
  });

  it('lifetimes: the refresh, ID token and session lifetimes are settings, shown with their source; a sign-in shorter than its access tokens is refused', async () => {
    const c = await config([], { AUTHCLI_REFRESH_TOKEN_TTL: '604800', AUTHCLI_ID_TOKEN_TTL: '300', AUTHCLI_SESSION_TTL: '3600' });
    expect(c.get('refresh_token_ttl')).toMatchObject({ value: '604800 s', source: 'env AUTHCLI_REFRESH_TOKEN_TTL' });
    expect(c.get('id_token_ttl')).toMatchObject({ value: '300 s', source: 'env AUTHCLI_ID_TOKEN_TTL' });
    expect(c.get('session_ttl')).toMatchObject({ value: '3600 s', source: 'env AUTHCLI_SESSION_TTL' });
    const defaults = await config([]);
    expect(defaults.get('refresh_token_ttl')).toMatchObject({ value: '2592000 s', source: 'default' });
    // A logout is retried as long as what ended could have been used: longer lifetimes keep it longer, never shorter.
    expect(defaults.get('backchannel_logout_deadline')?.value).toBe('43200 s (a session ended), 2592000 s (an access ended)');
    expect(c.get('backchannel_logout_deadline')?.value).toBe('43200 s (a session ended), 2592000 s (an access ended)');
    const long = await config([], { AUTHCLI_REFRESH_TOKEN_TTL: '7776000', AUTHCLI_SESSION_TTL: '2592000' });
    expect(long.get('backchannel_logout_deadline')?.value).toBe('2592000 s (a session ended), 7776000 s (an access ended)');
    const short = await serverCommand(['config'], { ...CLEAN, AUTHCLI_REFRESH_TOKEN_TTL: '3600', AUTHCLI_ACCESS_TOKEN_TTL: '7200' });
    expect(short.code).toBe(1);
    expect(short.stderr.trim()).toBe(
      'authcli-server: AUTHCLI_REFRESH_TOKEN_TTL (3600 s) must be at least AUTHCLI_ACCESS_TOKEN_TTL (7200 s): a sign-in outlives its access tokens',
    );
    const outOfRange: [string, string][] = [
      ['AUTHCLI_SESSION_TTL', '60'],
      ['AUTHCLI_REFRESH_TOKEN_TTL', String(91 * 86400)],
      ['AUTHCLI_ID_TOKEN_TTL', '1d'],
    ];
    for (const [name, value] of outOfRange) {
      const r = await serverCommand(['config'], { ...CLEAN, [name]: value });
      expect(r.code, name).toBe(1);
      expect(r.stderr, name).toContain(`${name} must be a whole number from`);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { sessionState } from '../src/commands/status.js';
import type { StoredSession } from '@authcli/client/internal/credentials.js';
import { CliError } from '../src/errors.js';
import {
  execCredentialVersion,
  hasExpired,
  needsRefresh,
  presented,
  renderToken,
  tokenFormat,
} from '@authcli/client/internal/token-output.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const jwt = (claims: Record<string, unknown>) => `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;

function session(over: Partial<StoredSession> = {}): StoredSession {
  return {
    client_id: 'authcli',
    access_token: 'access',
    token_type: 'Bearer',
    expires_at: NOW + 900_000,
    scope: 'openid profile offline_access',
    refresh_token: 'refresh',
    id_token: jwt({ sub: 'u', iat: NOW / 1000, exp: NOW / 1000 + 900 }),
    subject: 'u',
    username: 'alice',
    obtained_at: NOW,
    ...over,
  };
}

describe('when authcli token refreshes', () => {
  it('refreshes with less than 30 s left, not before', () => {
    expect(needsRefresh(session({ expires_at: NOW + 31_000, obtained_at: NOW - 869_000 }), 'token', NOW)).toBe(false);
    expect(needsRefresh(session({ expires_at: NOW + 29_000, obtained_at: NOW - 871_000 }), 'token', NOW)).toBe(true);
    expect(needsRefresh(session({ expires_at: NOW - 1 }), 'token', NOW)).toBe(true);
  });

  it('a token shorter-lived than a minute is refreshed at half its lifetime, so a just-stored one is used', () => {
    const fresh = session({ obtained_at: NOW, expires_at: NOW + 4000 });
    expect(needsRefresh(fresh, 'token', NOW + 1900)).toBe(false);
    expect(needsRefresh(fresh, 'token', NOW + 2100)).toBe(true);
    expect(hasExpired(fresh, 'token', NOW + 3999)).toBe(false);
    expect(hasExpired(fresh, 'token', NOW + 4000)).toBe(true);
  });

  it('exec-credential goes by the ID token: a valid one with an expired access token needs no refresh, an expired one does', () => {
    const accessExpired = session({ expires_at: NOW - 1000 });
    expect(needsRefresh(accessExpired, 'exec-credential', NOW)).toBe(false);
    expect(needsRefresh(accessExpired, 'token', NOW)).toBe(true);
    const idExpired = session({ id_token: jwt({ sub: 'u', iat: NOW / 1000 - 900, exp: NOW / 1000 - 1 }) });
    expect(needsRefresh(idExpired, 'exec-credential', NOW)).toBe(true);
    expect(hasExpired(idExpired, 'exec-credential', NOW)).toBe(true);
    expect(needsRefresh(idExpired, 'json', NOW)).toBe(false);
  });
});

describe('what authcli token prints', () => {
  it('exec-credential hands out the ID token when there is one, the access token otherwise', () => {
    expect(presented(session(), 'exec-credential')).toMatchObject({ kind: 'id_token', expiresAt: NOW + 900_000 });
    expect(presented(session({ id_token: undefined }), 'exec-credential')).toMatchObject({ kind: 'access_token', token: 'access' });
    expect(presented(session({ id_token: 'not-a-jwt' }), 'exec-credential')).toMatchObject({ kind: 'access_token' });
    expect(presented(session(), 'token').kind).toBe('access_token');
  });

  it('the bare token, JSON with expiry and scopes, or a client.authentication.k8s.io ExecCredential', () => {
    expect(renderToken(session(), 'token', NOW)).toBe('access\n');
    expect(JSON.parse(renderToken(session(), 'json', NOW + 500))).toEqual({
      access_token: 'access',
      token_type: 'Bearer',
      expires_at: '2026-11-23T12:15:00.000Z',
      expires_in: 899,
      scope: 'openid profile offline_access',
    });
    expect(JSON.parse(renderToken(session(), 'exec-credential', NOW, {}))).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: session().id_token, expirationTimestamp: '2026-11-23T12:15:00Z' },
    });
  });

  it('answers the ExecCredential version kubectl asks for in KUBERNETES_EXEC_INFO (v1, v1beta1), and refuses others', () => {
    const info = (apiVersion: string) => ({
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } }),
    });
    expect(execCredentialVersion({})).toBe('client.authentication.k8s.io/v1');
    expect(execCredentialVersion(info('client.authentication.k8s.io/v1'))).toBe('client.authentication.k8s.io/v1');
    expect(execCredentialVersion(info('client.authentication.k8s.io/v1beta1'))).toBe('client.authentication.k8s.io/v1beta1');
    expect(() => execCredentialVersion(info('client.authentication.k8s.io/v1alpha1'))).toThrow(CliError);
    expect(() => execCredentialVersion({ KUBERNETES_EXEC_INFO: '{' })).toThrow(/not JSON/);
  });

  it('--format is one of token, json, exec-credential; --json is --format json; both at once must agree', () => {
    expect(tokenFormat({})).toBe('token');
    expect(tokenFormat({ json: true })).toBe('json');
    expect(tokenFormat({ json: true, format: 'json' })).toBe('json');
    expect(tokenFormat({ format: 'exec-credential' })).toBe('exec-credential');
    expect(() => tokenFormat({ format: 'yaml' })).toThrow(/--format must be one of/);
    expect(() => tokenFormat({ json: true, format: 'exec-credential' })).toThrow(/--json and --format exec-credential/);
  });
});

describe('authcli status states', () => {
  it('valid, renewable (expired with a refresh token), expired (without), signed out', () => {
    expect(sessionState(session(), NOW)).toBe('valid');
    expect(sessionState(session({ expires_at: NOW }), NOW)).toBe('renewable');
    expect(sessionState(session({ expires_at: NOW, refresh_token: undefined }), NOW)).toBe('expired');
    expect(sessionState(undefined, NOW)).toBe('signed_out');
  });
});

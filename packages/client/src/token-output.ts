/**
 * What `authcli token` prints, and whether a cached session is still good
 * for it. No HTTP or JOSE code here: with a valid cached token `authcli token`
 * loads only this, the settings and the credentials (issue 14: its start-up
 * time is what scripts and kubectl pay on every call).
 */
import type { StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';

/** How a person uses a DPoP-bound token (RFC 9449): sent as `Authorization: Bearer` it is refused. */
export const BOUND_TOKEN_USE =
  "The tokens are DPoP-bound (RFC 9449): each request needs a proof of this machine's key. `authcli api URL` sends one; `authcli token --dpop --htu URL` prints the headers for curl.";

/**
 * The line `authcli token` adds on stderr when it prints a bound token and a person may be reading (stderr is a
 * terminal): `Authorization: Bearer $(authcli token)` would be refused, so it says what works instead.
 */
export function boundTokenNotice(session: StoredSession, format: TokenFormat, stderrIsTerminal: () => boolean): string | undefined {
  // Asked last: on the fast path the answer loads node:tty (and with it net and the stream classes).
  return format === 'token' && session.dpop_jkt && stderrIsTerminal() ? `authcli: ${BOUND_TOKEN_USE}\n` : undefined;
}

export const TOKEN_FORMATS = ['token', 'json', 'exec-credential'] as const;
/** `token`: the bare token; `json`: token, expiry and scopes; `exec-credential`: a Kubernetes client-go exec plugin answer. */
export type TokenFormat = (typeof TOKEN_FORMATS)[number];

/** Tokens with less than this left are refreshed rather than handed out (see needsRefresh). */
const EXPIRY_MARGIN_MS = 30_000;

export function tokenFormat(flags: { json?: boolean | undefined; format?: string | undefined }): TokenFormat {
  const format = flags.format;
  if (format !== undefined && !(TOKEN_FORMATS as readonly string[]).includes(format)) {
    throw new AuthcliError('config', `--format must be one of ${TOKEN_FORMATS.join(', ')}; got ${JSON.stringify(format)}`);
  }
  if (flags.json && format !== undefined && format !== 'json')
    throw new AuthcliError('config', `--json and --format ${format} ask for different output; use one`);
  return flags.json ? 'json' : ((format as TokenFormat | undefined) ?? 'token');
}

/** The exp and iat claims of a JWT, in epoch ms; not verified here (it was verified before it was stored). */
function jwtTimes(jwt: string): { exp: number; iat: number | undefined } | undefined {
  const payload = jwt.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown; iat?: unknown };
    if (typeof claims.exp !== 'number') return undefined;
    return { exp: claims.exp * 1000, iat: typeof claims.iat === 'number' ? claims.iat * 1000 : undefined };
  } catch {
    return undefined;
  }
}

/** The credential a format hands out, with its expiry and lifetime (epoch ms). */
export interface Presented {
  kind: 'access_token' | 'id_token';
  token: string;
  expiresAt: number;
  issuedAt: number;
}

/**
 * The access token, except for `exec-credential` when the session has an ID
 * token: a Kubernetes API server configured for OpenID Connect
 * (`--oidc-issuer-url`, or structured authentication) authenticates ID
 * tokens, whose `aud` is the client id it was configured with.
 */
export function presented(session: StoredSession, format: TokenFormat): Presented {
  if (format === 'exec-credential' && session.id_token) {
    const times = jwtTimes(session.id_token);
    if (times) return { kind: 'id_token', token: session.id_token, expiresAt: times.exp, issuedAt: times.iat ?? session.obtained_at };
  }
  return { kind: 'access_token', token: session.access_token, expiresAt: session.expires_at, issuedAt: session.obtained_at };
}

/**
 * Whether to refresh before handing the token out: less than 30 s left, or
 * less than half its lifetime for tokens shorter-lived than a minute, so a
 * token is never handed out to expire in flight, and a short-lived one that a
 * parallel process just stored is used rather than refreshed again.
 */
export function needsRefresh(session: StoredSession, format: TokenFormat, now: number): boolean {
  const p = presented(session, format);
  const margin = Math.min(EXPIRY_MARGIN_MS, Math.max(0, p.expiresAt - p.issuedAt) / 2);
  return p.expiresAt - margin <= now;
}

/** Whether the token a format hands out has expired outright. */
export function hasExpired(session: StoredSession, format: TokenFormat, now: number): boolean {
  return presented(session, format).expiresAt <= now;
}

const EXEC_CREDENTIAL_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

/**
 * The ExecCredential apiVersion to answer with: the one kubectl asks for in
 * KUBERNETES_EXEC_INFO (v1, or v1beta1, whose status has the same fields),
 * v1 when it is not set (run by hand).
 */
export function execCredentialVersion(env: NodeJS.ProcessEnv): string {
  const info = env.KUBERNETES_EXEC_INFO;
  if (!info) return EXEC_CREDENTIAL_VERSIONS[0]!;
  let apiVersion: unknown;
  try {
    apiVersion = (JSON.parse(info) as { apiVersion?: unknown }).apiVersion;
  } catch {
    throw new AuthcliError('config', 'KUBERNETES_EXEC_INFO is not JSON');
  }
  if (typeof apiVersion !== 'string' || !EXEC_CREDENTIAL_VERSIONS.includes(apiVersion)) {
    throw new AuthcliError(
      'config',
      `kubectl asks for ExecCredential ${String(apiVersion)}; authcli answers ${EXEC_CREDENTIAL_VERSIONS.join(' or ')} (set apiVersion in the kubeconfig's exec section)`,
    );
  }
  return apiVersion;
}

/** RFC 3339 in whole seconds, as Kubernetes writes its timestamps. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The text `authcli token` writes to stdout for a session that is good for `format`. */
export function renderToken(session: StoredSession, format: TokenFormat, now: number, env: NodeJS.ProcessEnv = process.env): string {
  if (format === 'token') return `${session.access_token}\n`;
  if (format === 'json') {
    return `${JSON.stringify({
      access_token: session.access_token,
      token_type: session.token_type,
      expires_at: new Date(session.expires_at).toISOString(),
      expires_in: Math.max(0, Math.floor((session.expires_at - now) / 1000)),
      scope: session.scope,
    })}\n`;
  }
  const p = presented(session, format);
  // client-go's ExecCredential: kubectl caches the token until expirationTimestamp, then runs the plugin again.
  return `${JSON.stringify({ apiVersion: execCredentialVersion(env), kind: 'ExecCredential', status: { token: p.token, expirationTimestamp: rfc3339(p.expiresAt) } })}\n`;
}

/**
 * What `authcli token --dpop` prints: the two header lines of a request with a DPoP-bound token (RFC 9449
 * §7.1), ready for `curl -H @-`; with `json`, the same values with the token's expiry.
 */
export function renderDpopHeaders(
  session: StoredSession,
  proof: string,
  request: { htm: string; htu: string },
  format: TokenFormat,
  now: number,
): string {
  const authorization = `DPoP ${session.access_token}`;
  if (format !== 'json') return `Authorization: ${authorization}\nDPoP: ${proof}\n`;
  return `${JSON.stringify({
    authorization,
    dpop: proof,
    htm: request.htm,
    htu: request.htu,
    token_type: session.token_type,
    expires_at: new Date(session.expires_at).toISOString(),
    expires_in: Math.max(0, Math.floor((session.expires_at - now) / 1000)),
  })}\n`;
}

// Loads no HTTP or JOSE code up front: refreshing and revoking import them when they run.
import {
  DEFAULT_PROFILE,
  describeSlot,
  resolveSettings,
  resourceFlag,
  type ProfileSettings,
  type SettingFlags,
} from '@authcli/client/internal/config.js';
import type { StoredSession } from '@authcli/client/internal/credentials.js';
import { CliError } from '../errors.js';
import { revocationFailed, type SignOutResult, signOutSession } from '@authcli/client/internal/sign-out.js';
import { validSession as validSessionOf } from '@authcli/client/internal/session.js';
import { terminalOutput } from '../output.js';
import { boundTokenNotice, renderDpopHeaders, renderToken, tokenFormat, type TokenFormat } from '@authcli/client/internal/token-output.js';

export interface TokenFlags extends SettingFlags {
  json?: boolean;
  format?: string;
  /** `--dpop`: print the Authorization and DPoP header values for one request (RFC 9449 §7.1). */
  dpop?: boolean;
  htm?: string;
  htu?: string;
  /** A resource server's `DPoP-Nonce` (§9), for the proof. */
  nonce?: string;
  /** `--resource URL`: a token for that API (RFC 8707), from the same sign-in. */
  resource?: string;
}

/** The request `--dpop` signs for: `--htm` (default GET) and an absolute http(s) `--htu`. */
function dpopRequest(flags: TokenFlags): { htm: string; htu: string } | undefined {
  const usage = (message: string) => new CliError('usage', message, { hint: 'See `authcli token --help`.' });
  if (!flags.dpop) {
    if (flags.htm !== undefined || flags.htu !== undefined || flags.nonce !== undefined)
      throw usage('--htm, --htu and --nonce go with --dpop');
    return undefined;
  }
  if (flags.format === 'exec-credential') throw usage('--dpop prints request headers; it does not go with --format exec-credential');
  if (flags.htu === undefined) throw usage('--dpop needs --htu, the URL of the request the proof is for');
  let url: URL;
  try {
    url = new URL(flags.htu);
  } catch {
    throw usage(`--htu must be an absolute URL, got ${JSON.stringify(flags.htu)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usage(`--htu must be an http(s) URL, got ${JSON.stringify(flags.htu)}`);
  const htm = (flags.htm ?? 'GET').toUpperCase();
  if (!/^[A-Z]+$/.test(htm)) throw usage(`--htm must be an HTTP method such as GET or POST, got ${JSON.stringify(flags.htm)}`);
  return { htm, htu: url.href };
}

function bearerOnly(slot: string): CliError {
  return new CliError(
    'usage',
    `the sign-in to ${describeSlot(slot)} has a Bearer token (the server does not use DPoP): run \`authcli token\` and send it as "Authorization: Bearer <token>"`,
  );
}

/**
 * The profile's sign-in with a token good for `format` (packages/client/src/session.ts), its notices on stderr.
 * When nothing is stored for the profile, the error names a sign-in under another loopback name of the server and
 * the issuer the other profiles use (issuer-hints.ts): work done only on that path.
 */
export async function validSession(
  settings: ProfileSettings,
  format: TokenFormat,
  signal?: AbortSignal,
  check?: (session: StoredSession) => Promise<void>,
  rejected?: string,
): Promise<StoredSession> {
  const out = terminalOutput();
  let stored = false;
  try {
    return await validSessionOf(settings, format, {
      signal,
      rejected,
      notices: out,
      check: async (session) => {
        stored = true;
        await check?.(session);
      },
    });
  } catch (err) {
    if (stored || !(err instanceof CliError) || err.code !== 'signed_out') throw err;
    const hints = await import('../issuer-hints.js');
    const notice = await hints.defaultIssuerNotice(settings);
    if (notice) out.say(notice);
    const message = await hints.notSignedInMessage(settings, err.message);
    throw message === err.message ? err : new CliError('signed_out', message, { cause: err });
  }
}

/**
 * `authcli token`: a valid token on stdout (`--json`, `--format
 * exec-credential`), refreshed under the session lock when it is about to
 * expire (see validSession).
 */
export async function token(flags: TokenFlags, signal?: AbortSignal): Promise<void> {
  const request = dpopRequest(flags);
  const format = tokenFormat(flags);
  const settings = { ...(await resolveSettings(flags)), resource: resourceFlag(flags.resource, 'token') };
  const { slot } = settings;
  // --dpop: the key is looked for first, so a sign-in whose key is not here is refused before any refresh.
  const dpop = request ? await import('@authcli/client/internal/dpop.js') : undefined;
  const session = await validSession(settings, format, signal, async (seen) => {
    if (dpop && !(await dpop.keyOfSession(slot, seen))) throw bearerOnly(slot);
  });
  if (!request || !dpop) {
    process.stdout.write(renderToken(session, format, Date.now()));
    const notice = boundTokenNotice(session, format, () => process.stderr.isTTY === true);
    if (notice) process.stderr.write(notice);
    return;
  }
  // The session as it is now (refreshed with the same key, or replaced by a login meanwhile) names its key.
  const key = await dpop.keyOfSession(settings.slot, session);
  if (!key) throw bearerOnly(settings.slot);
  const proof = await dpop.dpopProof(key, { ...request, nonce: flags.nonce, accessToken: session.access_token });
  process.stdout.write(renderDpopHeaders(session, proof, request, format, Date.now()));
}

/**
 * `authcli logout`: revoke the sign-in at the server (RFC 7009), then forget
 * it here. When the server cannot be reached or refuses, the session is kept
 * and the command fails: a local delete would leave a live refresh token at
 * the server without anyone knowing. `--local` only forgets it here, and says
 * that the token stays valid at the server.
 */
export async function logout(flags: SettingFlags & { local?: boolean }, signal?: AbortSignal): Promise<void> {
  const out = terminalOutput();
  const settings = await resolveSettings(flags);
  const { issuer, slot } = settings;
  const named = describeSlot(slot);
  let result: SignOutResult;
  try {
    result = await signOutSession(settings, { local: flags.local, signal, purpose: `using the sign-in to ${named}` });
  } catch (err) {
    if (!revocationFailed(err)) throw err;
    throw new CliError(
      err.code,
      `could not revoke the sign-in at ${issuer}: ${err.message}; still signed in here (\`authcli logout --local${settings.profile === DEFAULT_PROFILE ? '' : ` --profile ${settings.profile}`}\` forgets it on this machine only, leaving the token valid at the server)`,
      { cause: err },
    );
  }
  if (result.outcome === 'not_signed_in') {
    const notice = await (await import('../issuer-hints.js')).defaultIssuerNotice(settings);
    if (notice) out.say(notice);
    process.stdout.write(`Not signed in to ${named}.\n`);
    return;
  }
  const token = result.session.refresh_token ? 'refresh' : 'access';
  if (result.outcome === 'forgotten') {
    process.stdout.write(`Signed out of ${named} on this machine.\n`);
    out.say(`The ${token} token was not revoked: it stays valid at ${issuer} until it expires.`);
    return;
  }
  if (result.outcome === 'unsupported') {
    out.say(`${issuer} offers no token revocation (RFC 7009): the ${token} token stays valid there until it expires.`);
  }
  process.stdout.write(`Signed out of ${named}.\n`);
}

/**
 * @authcli/client: sign a person in from a Node command-line tool, against any standard OAuth 2.0 / OpenID
 * Connect server, the way `authcli` does: the device flow (RFC 8628) or the local browser (RFC 8252 loopback
 * redirect, PKCE S256), tokens kept in the OS keychain (or a 0600 file, or this process's memory), refreshed
 * under a lock that several processes share, optionally bound to a key of this machine (DPoP, RFC 9449).
 *
 * The tool draws its own prompt: the library shows nothing, and says what a person should know through
 * `onDeviceCode` and `notices`.
 *
 * @packageDocumentation
 */
import { createHash } from 'node:crypto';
import { DEFAULT_CLIENT_ID, DEFAULT_PROFILE, isApiIdentifier, PROFILE_NAME, type ProfileSettings, slotOf } from './config.js';
import { describeStore, locateSession, readSession, type StoredSession } from './credentials.js';
import type { DeviceCode } from './device/flow.js';
import { AuthcliError } from './errors.js';
import type { Notices } from './notices.js';
import { validSession } from './session.js';
import { signInPerson } from './sign-in.js';
import { signOutSession } from './sign-out.js';
import { openInBrowser } from './browser/open.js';
import { sessionFor } from './storage/session.js';
import { errorInToolWords, inToolWords, type ToolWords } from './voice.js';
import { resolve } from 'node:path';
import { normalizeIssuer } from '@authcli/protocol';

export { AuthcliError, type AuthcliErrorCode } from './errors.js';
export type { DeviceCode } from './device/flow.js';

/** Where sign-ins are kept: the OS keychain, a 0600 file in `$XDG_CONFIG_HOME/authcli`, or this process's memory. */
export type Storage = 'keychain' | 'file' | 'memory';

/** Which sign-in: the server, the application (client) and the profile (several accounts on one server). */
export interface Target {
  /** The authorization server's issuer identifier, e.g. `https://id.example.com`. */
  issuer: string;
  /** The application's client id, as registered at the server (a public native client). */
  clientId: string;
  /** Keeps several sign-ins to one server apart (default `"default"`); 1-64 letters, digits, `.`, `_`, `-`. */
  profile?: string | undefined;
  /**
   * Where the sign-in is kept. Default: the keychain when one answers on this machine, else the file (said once
   * through `notices`). `authcli` keeps its sign-ins in the same places: a tool and `authcli` signed in with the
   * same issuer, client and profile share one sign-in (and one lock).
   */
  storage?: Storage | undefined;
  /**
   * The folder of the file storage, the locks, the DPoP keys of file-kept sign-ins and the servers' DPoP nonces
   * (default `$XDG_CONFIG_HOME/authcli`, authcli's own; created 0700 when first written). Give your tool its own
   * folder to keep its sign-ins apart from authcli's; the keychain's entries are told apart by issuer and profile.
   */
  directory?: string | undefined;
  /** Where the library says what a person should know (a wait for another process, a fallback to the file). */
  notices?: ((line: string) => void) | undefined;
  /** The tool's name as people know it, in messages and on the browser's last page (default: `clientId`). */
  appName?: string | undefined;
  /** What a person does to sign in again, as messages say it (default "sign in again"), e.g. "run `deploy login`". */
  signInAgain?: string | undefined;
}

export interface SignInOptions extends Target {
  /** `device` (a code to enter on any device: headless machines, SSH) or `browser` (this machine's browser). */
  flow: 'device' | 'browser';
  /** Default `openid profile offline_access`: who signed in, and a refresh token. */
  scope?: string | undefined;
  /** The API the tokens are for (RFC 8707 resource indicator): an absolute http(s) URL. */
  resource?: string | undefined;
  /** Device flow (required for it): show the person the code, the URL, and, if you like, a QR code of `verificationUriComplete`. */
  onDeviceCode?: ((code: DeviceCode) => void | Promise<void>) | undefined;
  /**
   * Browser flow: open the URL in the browser and say whether that worked. Default: the system browser (the
   * `open` package) when this machine has a display; with `false`, or when it fails, the URL goes to `notices`.
   */
  openBrowser?: ((url: string) => boolean | Promise<boolean>) | false | undefined;
  /** Browser flow: the loopback port (default any free one) and how long to wait for the browser (default 5 min). */
  port?: number | undefined;
  timeoutMs?: number | undefined;
  /** Bind the tokens to a new key of this machine (DPoP, RFC 9449). Default: only when the application requires it. */
  dpop?: boolean | undefined;
  /** Cancels the sign-in (AuthcliError `cancelled`). */
  signal?: AbortSignal | undefined;
}

/** Who signed in, where, and until when. */
export interface SignedIn {
  issuer: string;
  /** The `sub` of the ID token (or of a JWT access token); undefined when the server named no one. */
  subject: string | undefined;
  /** A name to show: `preferred_username`, else `email`, from the ID token or userinfo. */
  username?: string | undefined;
  /** When the access token expires (it is refreshed by getToken). */
  expiresAt: Date;
  /** `Bearer`, or `DPoP` when the tokens are bound to this machine's key. */
  tokenType: 'Bearer' | 'DPoP';
  scope: string;
}

export interface GetTokenOptions extends Target {
  /** A token for this API (RFC 8707) from the same sign-in (refreshed for it the first time). */
  resource?: string | undefined;
  /** Seconds the returned token must stay valid at least (default 30, or half a short token's lifetime). */
  minValidity?: number | undefined;
  /** Cancels a wait for another process's refresh (never a refresh under way: its answer holds the only valid refresh token). */
  signal?: AbortSignal | undefined;
}

export interface AuthorizationOptions extends GetTokenOptions {
  /** The request the headers go with: its method (default GET) and absolute URL. */
  method?: string | undefined;
  url: string;
  /** The API's latest `DPoP-Nonce` (RFC 9449 §9), when it answered 401 `use_dpop_nonce` with one: ask again with it. */
  nonce?: string | undefined;
}

export interface Status {
  signedIn: boolean;
  issuer: string;
  profile: string;
  /** Where the sign-in is kept: `keychain (Secret Service)`, the file's path, or `memory (this process)`. */
  storedIn: string;
  subject?: string | undefined;
  username?: string | undefined;
  scope?: string | undefined;
  tokenType?: 'Bearer' | 'DPoP' | undefined;
  expiresAt?: Date | undefined;
  /** Whether an expired access token can be renewed without the person (a refresh token). */
  renewable?: boolean | undefined;
}

const DEFAULT_SCOPE = 'openid profile offline_access';

/** The settings the library's modules take, from the public options: storage and notices go through `env`. */
function settingsOf(t: Target & { resource?: string | undefined }): ProfileSettings {
  if (typeof t.issuer !== 'string' || typeof t.clientId !== 'string' || t.clientId === '') {
    throw new AuthcliError('usage', 'issuer and clientId are required');
  }
  let issuer: string;
  try {
    issuer = normalizeIssuer(t.issuer);
  } catch (err) {
    throw new AuthcliError('config', (err as Error).message, { cause: err });
  }
  const profile = t.profile ?? defaultProfile(t.clientId);
  if (!PROFILE_NAME.test(profile)) {
    throw new AuthcliError('usage', `invalid profile name ${JSON.stringify(profile)}: 1-64 letters, digits, '.', '_' or '-'`);
  }
  if (t.storage !== undefined && !['keychain', 'file', 'memory'].includes(t.storage)) {
    throw new AuthcliError('usage', `storage must be keychain, file or memory, not ${JSON.stringify(t.storage)}`);
  }
  if (t.resource !== undefined) resourceOf(t.resource);
  const env: NodeJS.ProcessEnv = { ...process.env, AUTHCLI_STORAGE: t.storage ?? '' };
  if (t.directory !== undefined) {
    if (typeof t.directory !== 'string' || t.directory === '') throw new AuthcliError('usage', 'directory must be a folder path');
    // The keychain is the machine's, and its entries would be shared with the default folder's sign-ins while the
    // locks are in this folder: a folder of its own keeps its sign-ins in its own file (or in memory).
    if (t.storage === 'keychain') throw new AuthcliError('usage', 'directory keeps sign-ins in a file in it: not with storage "keychain"');
    env.AUTHCLI_CONFIG_DIR = resolve(t.directory);
    env.AUTHCLI_STORAGE = t.storage ?? 'file';
  }
  return { issuer, clientId: t.clientId, clientSecret: undefined, resource: t.resource, profile, slot: slotOf(issuer, profile), env };
}

/**
 * The profile of a tool that names none: authcli's own default for its client (`authcli`, so that the tool and
 * `authcli login` share it), else one per client id, so that two tools on one server never take, refresh or
 * revoke each other's sign-in.
 */
function defaultProfile(clientId: string): string {
  if (clientId === DEFAULT_CLIENT_ID) return DEFAULT_PROFILE;
  return PROFILE_NAME.test(clientId) ? clientId : `client-${createHash('sha256').update(clientId).digest('hex').slice(0, 16)}`;
}

function otherClients(settings: ProfileSettings, stored: StoredSession): AuthcliError {
  return new AuthcliError(
    'usage',
    `the profile ${settings.profile} of ${settings.issuer} holds the sign-in of another application (${stored.client_id}); give this one another profile`,
  );
}

function resourceOf(value: string): void {
  if (!isApiIdentifier(value)) {
    throw new AuthcliError(
      'usage',
      `resource must be the absolute http(s) URL of an API, without a fragment; got ${JSON.stringify(value)}`,
    );
  }
}

const wordsOf = (t: Target): ToolWords => ({ name: t.appName ?? t.clientId, signInAgain: t.signInAgain ?? 'sign in again' });

const noticesOf = (t: Target): Notices => {
  const say = t.notices;
  const words = wordsOf(t);
  return { say: say ? (line) => say(inToolWords(line, words)) : () => undefined };
};

/** A system error (a folder that cannot be created or written: EACCES, ENOTDIR, EROFS) as the storage's AuthcliError. */
function fromSystem(err: unknown): unknown {
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || err instanceof AuthcliError || typeof e.code !== 'string' || typeof e.syscall !== 'string') return err;
  return new AuthcliError('storage', `cannot keep the sign-in${e.path ? ` in ${e.path}` : ''}: ${e.message}`, { cause: err });
}

/** Runs a public function's work with its failures in the tool's words (voice.ts). */
async function said<T>(t: Target, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw errorInToolWords(fromSystem(err), wordsOf(t));
  }
}

function signedIn(issuer: string, s: StoredSession): SignedIn {
  return {
    issuer,
    subject: s.subject,
    ...(s.username !== undefined && { username: s.username }),
    expiresAt: new Date(s.expires_at),
    tokenType: s.token_type === 'DPoP' ? 'DPoP' : 'Bearer',
    scope: s.scope,
  };
}

/**
 * Signs a person in and keeps the sign-in (replacing, and revoking, the one the profile had). Throws
 * AuthcliError: `access_denied` (the person said no), `expired_token` (the code expired), `timeout` (no answer
 * from the browser), `cancelled` (the signal), `network`, `discovery`, `invalid_client`, `id_token`, and others.
 */
export function signIn(options: SignInOptions): Promise<SignedIn> {
  return said(options, () => signInNow(options));
}

async function signInNow(options: SignInOptions): Promise<SignedIn> {
  const settings = settingsOf(options);
  if (options.flow !== 'device' && options.flow !== 'browser') throw new AuthcliError('usage', 'flow must be "device" or "browser"');
  if (options.port !== undefined && !(Number.isInteger(options.port) && options.port >= 0 && options.port <= 65535)) {
    throw new AuthcliError('usage', `port must be 0-65535, got ${String(options.port)}`);
  }
  if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
    throw new AuthcliError('usage', `timeoutMs must be a positive number of milliseconds, got ${String(options.timeoutMs)}`);
  }
  const stored = await readSession(settings.slot, settings.env);
  if (stored && stored.client_id !== settings.clientId) throw otherClients(settings, stored);
  const opener = options.openBrowser;
  const notices = options.notices;
  // Where nothing opens the URL and nothing shows it, the flow would wait for a browser no one can reach.
  const open = async (url: string): Promise<boolean> => {
    const opened = opener === false ? false : opener ? await opener(url) : await openInBrowser(url);
    if (!opened && !notices) {
      throw new AuthcliError('no_browser', 'no browser was opened, and without notices nothing shows the sign-in URL; use the device flow');
    }
    return opened;
  };
  const session = await signInPerson(settings, {
    flow: options.flow,
    scope: options.scope ?? DEFAULT_SCOPE,
    dpop: options.dpop === true,
    notices: noticesOf(options),
    signal: options.signal,
    onDeviceCode: options.onDeviceCode,
    openBrowser: open,
    port: options.port,
    timeoutMs: options.timeoutMs,
    appName: wordsOf(options).name,
  });
  return signedIn(settings.issuer, session);
}

/**
 * A valid access token of the profile's sign-in: the stored one while it has `minValidity` left, else a new one
 * (a refresh under the cross-process lock, so each refresh token is sent once however many processes ask at
 * once). Throws AuthcliError `signed_out` when there is no sign-in, or it has ended at the server.
 */
export function getToken(options: GetTokenOptions): Promise<string> {
  return said(options, () => getTokenNow(options));
}

async function getTokenNow(options: GetTokenOptions): Promise<string> {
  return (await sessionNow(options, settingsOf(options))).access_token;
}

/** The sign-in with a token that has `minValidity` left (getToken's). */
async function sessionNow(options: GetTokenOptions, settings: ProfileSettings): Promise<StoredSession> {
  const notices = noticesOf(options);
  const minMs = (options.minValidity ?? 0) * 1000;
  if (!(minMs >= 0 && Number.isFinite(minMs))) throw new AuthcliError('usage', 'minValidity must be a number of seconds, 0 or more');
  const stored = await readSession(settings.slot, settings.env);
  if (stored && stored.client_id !== settings.clientId) throw otherClients(settings, stored);
  let session = await validSession(settings, 'token', { signal: options.signal, notices });
  if (session.client_id !== settings.clientId) throw otherClients(settings, session);
  // Asked to last longer than the stored token will: refreshed as a token a resource server refused would be.
  if (session.expires_at - Date.now() < minMs) {
    session = await validSession(settings, 'token', { signal: options.signal, notices, rejected: session.access_token });
    if (session.expires_at - Date.now() < minMs) {
      throw new AuthcliError('protocol', `${settings.issuer} issues tokens that last less than minValidity (${options.minValidity} s)`);
    }
  }
  return session;
}

/**
 * The headers that authorize one request to an API with the profile's sign-in: `authorization: Bearer <token>`,
 * or for a DPoP-bound sign-in (RFC 9449 §7.1) `authorization: DPoP <token>` and a `dpop` proof for this method
 * and URL, signed with this machine's key. The token is getToken's. A bound token sent as Bearer is refused, so
 * use these rather than getToken when the sign-in may be bound (`dpop: true`, or an application that requires it).
 */
export function authorization(options: AuthorizationOptions): Promise<Record<string, string>> {
  return said(options, () => authorizationNow(options));
}

async function authorizationNow(options: AuthorizationOptions): Promise<Record<string, string>> {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new AuthcliError('usage', `url must be an absolute URL, got ${JSON.stringify(options.url)}`);
  }
  const method = (options.method ?? 'GET').toUpperCase();
  if (!/^[A-Z]+$/.test(method))
    throw new AuthcliError('usage', `method must be an HTTP method such as GET or POST, got ${JSON.stringify(options.method)}`);
  const settings = settingsOf(options);
  const session = await sessionNow(options, settings);
  const token = session.access_token;
  if (!session.dpop_jkt) return { authorization: `Bearer ${token}` };
  const { dpopProof, keyOfSession } = await import('./dpop.js');
  // A bound sign-in whose key is not here is refused (AuthcliError signed_out), never sent as Bearer.
  const key = (await keyOfSession(settings.slot, session, settings.env))!;
  const proof = await dpopProof(key, { htm: method, htu: url.href, nonce: options.nonce, accessToken: token });
  return { authorization: `DPoP ${token}`, dpop: proof };
}

/**
 * Revokes the sign-in at the server (RFC 7009), then forgets it. When the server cannot be reached or refuses,
 * the sign-in is kept and the error thrown; `local: true` only forgets it here, leaving the token valid at the
 * server until it expires. Resolves to whether there was a sign-in.
 */
export function signOut(options: Target & { local?: boolean | undefined; signal?: AbortSignal | undefined }): Promise<boolean> {
  return said(options, () => signOutNow(options));
}

async function signOutNow(options: Target & { local?: boolean | undefined; signal?: AbortSignal | undefined }): Promise<boolean> {
  const settings = settingsOf(options);
  const result = await signOutSession(settings, { local: options.local, signal: options.signal, clientId: settings.clientId });
  if (result.outcome === 'unsupported')
    noticesOf(options).say(`${options.issuer} offers no token revocation: the token stays valid there until it expires.`);
  return result.outcome !== 'not_signed_in';
}

/** Who is signed in to the profile, until when, and where the sign-in is kept; reads only what is stored here. */
export function status(options: Target & { resource?: string | undefined }): Promise<Status> {
  return said(options, () => statusNow(options));
}

async function statusNow(options: Target & { resource?: string | undefined }): Promise<Status> {
  const settings = settingsOf(options);
  const { session: stored, store } = await locateSession(settings.slot, settings.env);
  const base = { issuer: settings.issuer, profile: settings.profile, storedIn: describeStore(store) };
  if (!stored || stored.client_id !== settings.clientId) return { signedIn: false, ...base };
  const session = sessionFor(stored, settings.resource) ?? stored;
  return {
    signedIn: true,
    ...base,
    subject: session.subject,
    username: session.username,
    scope: session.scope,
    tokenType: session.token_type === 'DPoP' ? 'DPoP' : 'Bearer',
    expiresAt: new Date(session.expires_at),
    renewable: Boolean(stored.refresh_token) || stored.kind === 'application',
  };
}

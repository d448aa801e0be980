// A person's sign-in, device or browser flow, from the server's metadata to the stored session: what
// @authcli/client's signIn and `authcli login` both run. What a person sees is the caller's (onDeviceCode,
// openBrowser, notices).
import type { TokenResponse } from '@authcli/protocol';
import { browserLogin } from './browser/login.js';
import type { ProfileSettings } from './config.js';
import type { StoredSession } from './credentials.js';
import { type DeviceCode, deviceFlow } from './device/flow.js';
import { type Clock, type PollEvents, realClock } from './device/poll.js';
import { type DpopKey, dpopTransport, dpopWhenRequired, generateDpopKey, savedNonces, serverUsesDpop } from './dpop.js';
import { AuthcliError } from './errors.js';
import { httpTransport, type Transport } from './http.js';
import type { Notices } from './notices.js';
import { discover, type ServerMetadata } from './oauth/discovery.js';
import { replaceSession } from './revocation.js';
import { displayNameFromUserinfo, sessionFromTokens } from './tokens.js';

/** How the token requests of a sign-in are sent: with DPoP proofs when asked for, or when the application requires them. */
export interface SignInPlan {
  meta: ServerMetadata;
  tokenTransport: Transport;
  /** The sign-in's DPoP key: the one asked for, or the one made when the server required a proof; else none. */
  dpopKey(): DpopKey | undefined;
  /** The thumbprint sent as `dpop_jkt` with the authorization request (RFC 9449 §10) when DPoP was asked for. */
  askedJkt: string | undefined;
}

/**
 * The server's metadata and the transport of the sign-in's token requests. RFC 9449 binding when asked for
 * (`dpop`), or when the application requires it (the token endpoint then refuses a request without a proof, and
 * dpopWhenRequired binds from there); else Bearer, which most APIs take.
 */
export async function planSignIn(settings: ProfileSettings, dpop: boolean): Promise<SignInPlan> {
  const meta = await discover(settings.issuer, httpTransport);
  if (dpop && !serverUsesDpop(meta)) {
    throw new AuthcliError('discovery', `${settings.issuer} does not take DPoP proofs signed with ES256; sign in without DPoP`);
  }
  const env = settings.env;
  const asked = dpop ? { key: await generateDpopKey(), nonces: await savedNonces(env) } : undefined;
  const onDemand = asked ? undefined : dpopWhenRequired(httpTransport, () => savedNonces(env));
  return {
    meta,
    tokenTransport: asked ? dpopTransport(httpTransport, asked.key, { nonces: asked.nonces }) : onDemand!.transport,
    dpopKey: () => asked?.key ?? onDemand?.key(),
    askedJkt: asked?.key.jkt,
  };
}

/**
 * Verifies the tokens (the ID token: OIDC Core §3.1.3.7), names the user (userinfo when the ID token does not),
 * and stores the sign-in under the session lock with its key; the session it replaces is revoked after, best effort.
 */
export async function storeSignIn(
  plan: SignInPlan,
  settings: ProfileSettings,
  tokens: TokenResponse,
  nonce: string | undefined,
  notices: Notices,
  signal?: AbortSignal,
): Promise<StoredSession> {
  const session = await sessionFromTokens(tokens, plan.meta, settings, { nonce, dpopJkt: plan.dpopKey()?.jkt });
  const key = session.dpop_jkt ? plan.dpopKey() : undefined;
  if (!session.username && session.scope.split(' ').includes('openid')) {
    const resource =
      key && dpopTransport(httpTransport, key, { nonces: await savedNonces(settings.env), accessToken: session.access_token });
    session.username = await displayNameFromUserinfo(plan.meta, session.access_token, session.subject, httpTransport, resource);
  }
  await replaceSession(settings, session, plan.meta, notices, signal, key);
  return session;
}

export interface PersonSignIn {
  flow: 'device' | 'browser';
  scope: string;
  dpop: boolean;
  notices: Notices;
  signal?: AbortSignal | undefined;
  /** Device flow: shows the code (required for it). */
  onDeviceCode?: ((code: DeviceCode) => void | Promise<void>) | undefined;
  /** Device flow: each wait between polls, with its reason (slow_down, a network failure). */
  onWait?: PollEvents['onWait'];
  /** Browser flow: opens the URL in the browser; false when it could not (the URL is in the notices too). */
  openBrowser?: ((url: string) => Promise<boolean>) | undefined;
  /** Browser flow: the loopback port (0: any free one) and how long to wait for the browser. */
  port?: number | undefined;
  timeoutMs?: number | undefined;
  clock?: Clock | undefined;
  /** Browser flow: the tool's name on the page the browser shows at the end (default authcli). */
  appName?: string | undefined;
}

/** How long the browser flow waits for the browser by default. */
export const BROWSER_TIMEOUT_MS = 5 * 60_000;

/** Signs a person in by the device or the browser flow and stores the sign-in (see storeSignIn). */
export async function signInPerson(settings: ProfileSettings, opts: PersonSignIn, plan?: SignInPlan): Promise<StoredSession> {
  plan ??= await planSignIn(settings, opts.dpop);
  if (opts.flow === 'browser') {
    return browserLogin(plan.meta, settings, httpTransport, {
      scope: opts.scope,
      port: opts.port ?? 0,
      openBrowser: opts.openBrowser,
      say: (line) => opts.notices.say(line),
      timeoutMs: opts.timeoutMs ?? BROWSER_TIMEOUT_MS,
      signal: opts.signal,
      complete: (tokens, nonce) => storeSignIn(plan, settings, tokens, nonce, opts.notices, opts.signal),
      tokenTransport: plan.tokenTransport,
      dpopJkt: plan.askedJkt,
      appName: opts.appName,
    });
  }
  if (!opts.onDeviceCode) throw new AuthcliError('usage', 'the device flow needs onDeviceCode, to show the person the code');
  const tokens = await deviceFlow(plan.meta, settings, httpTransport, {
    scope: opts.scope,
    clock: opts.clock ?? realClock,
    onDeviceCode: opts.onDeviceCode,
    signal: opts.signal,
    tokenTransport: plan.tokenTransport,
    onWait: opts.onWait,
  });
  return storeSignIn(plan, settings, tokens, undefined, opts.notices, opts.signal);
}

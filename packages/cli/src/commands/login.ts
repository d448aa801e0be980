import { createInterface } from 'node:readline';
import { DEFAULT_PROFILE, resolveSettings, resourceFlag, type SettingFlags } from '@authcli/client/internal/config.js';
import { deviceLogin } from '../device/login.js';
import { realClock } from '@authcli/client/internal/device/poll.js';
import { CliError } from '../errors.js';
import { createOutput, hasDisplay, openInBrowser, type Output } from '../output.js';
import { rememberProfile } from '../profiles.js';
import { replaceSession } from '@authcli/client/internal/revocation.js';
import { BOUND_TOKEN_USE } from '@authcli/client/internal/token-output.js';
import { BROWSER_TIMEOUT_MS, planSignIn, signInPerson, storeSignIn } from '@authcli/client/internal/sign-in.js';
import { httpTransport } from '@authcli/client/internal/http.js';
import { confirmReplace } from './replace-prompt.js';

export interface LoginFlags extends SettingFlags {
  browser?: boolean;
  scope: string;
  open: boolean;
  port?: string;
  json?: boolean;
  /** `--no-qr` makes this false. */
  qr?: boolean;
  /** `--timeout SECONDS` for --browser. */
  timeout?: string;
  /** `--dpop`: ask for tokens bound to a key of this machine (RFC 9449). */
  dpop?: boolean;
  /** `--force`: replace the profile's current sign-in without asking. */
  force?: boolean;
  /** `--resource URL`: tokens for that API (RFC 8707). */
  resource?: string;
  /** `--client-credentials`: the application signs in as itself (RFC 6749 §4.4), with its secret. */
  clientCredentials?: boolean;
  /** `--ci`: a CI job signs in with its own OIDC token (RFC 8693), `--ci-audience`, `--ci-token-env`. */
  ci?: boolean;
  ciAudience?: string;
  ciTokenEnv?: string;
}

/** `--scope`'s default: a person's sign-in. An application's asks the server for its default instead. */
export const DEFAULT_LOGIN_SCOPE = 'openid profile offline_access';

export { BROWSER_TIMEOUT_MS };

function parsePort(value: string | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535) throw new CliError('config', `--port must be 1-65535, got ${value}`);
  return n;
}

function parseTimeout(value: string | undefined): number {
  if (value === undefined) return BROWSER_TIMEOUT_MS;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new CliError('usage', `--timeout must be a whole number of seconds, got ${value}`, { hint: 'See `authcli login --help`.' });
  return Number(value) * 1000;
}

/** `authcli login`: device flow by default, `--browser` for the loopback code flow. */
export async function login(flags: LoginFlags, signal: AbortSignal, out: Output = createOutput()): Promise<void> {
  const settings = { ...(await resolveSettings(flags)), resource: resourceFlag(flags.resource, 'login') };
  const timeoutMs = parseTimeout(flags.timeout);
  // Before any request: a profile about to sign in at the built-in default while the others are elsewhere.
  const notice = settings.defaultIssuer && (await (await import('../issuer-hints.js')).defaultIssuerNotice(settings));
  if (notice) out.say(notice);
  // Before any request: a person who says no to replacing the current sign-in has cost the server nothing.
  await confirmReplace(settings, { force: flags.force === true, out, signal });
  // DPoP when asked for (`--dpop`) or when the application requires it; else Bearer, which `$(authcli token)`
  // and most APIs take (packages/client/src/sign-in.ts).
  const plan = await planSignIn(settings, flags.dpop === true);
  const { meta, tokenTransport, dpopKey } = plan;
  let session;
  if (flags.ci) {
    if (flags.browser || flags.clientCredentials) {
      throw new CliError('usage', '--ci signs a CI job in with its own token: not with --browser or --client-credentials', {
        hint: 'See `authcli login --help`.',
      });
    }
    const { workloadSession } = await import('@authcli/client/internal/workload.js');
    session = await workloadSession(meta, settings, {
      source: { audience: flags.ciAudience ?? settings.issuer, tokenEnv: flags.ciTokenEnv },
      scope: flags.scope === DEFAULT_LOGIN_SCOPE ? undefined : flags.scope,
      transport: httpTransport,
      tokenTransport,
      dpopJkt: dpopKey()?.jkt,
    });
    await replaceSession(settings, session, meta, out, signal, session.dpop_jkt ? dpopKey() : undefined);
  } else if (flags.clientCredentials) {
    if (flags.browser)
      throw new CliError('usage', '--client-credentials signs an application in with its secret: no browser', {
        hint: 'See `authcli login --help`.',
      });
    const { applicationSession } = await import('@authcli/client/internal/application.js');
    session = await applicationSession(meta, settings, {
      scope: flags.scope === DEFAULT_LOGIN_SCOPE ? undefined : flags.scope,
      transport: httpTransport,
      tokenTransport,
      dpopJkt: dpopKey()?.jkt,
    });
    await replaceSession(settings, session, meta, out, signal, session.dpop_jkt ? dpopKey() : undefined);
  } else if (flags.browser) {
    if (flags.open && !hasDisplay()) {
      throw new CliError(
        'no_browser',
        'no browser can be opened here (no display, e.g. an SSH session); run `authcli login` for the device flow, or `--browser --no-open` to open the URL yourself',
      );
    }
    session = await signInPerson(
      settings,
      {
        flow: 'browser',
        scope: flags.scope,
        dpop: flags.dpop === true,
        notices: out,
        signal,
        openBrowser: flags.open ? openInBrowser : undefined,
        port: parsePort(flags.port),
        timeoutMs,
      },
      plan,
    );
  } else {
    // On a terminal with a display, Enter opens the verification page in the local browser.
    const prompt = process.stdin.isTTY && hasDisplay() && flags.open ? createInterface({ input: process.stdin }) : undefined;
    const offerBrowser = prompt
      ? (url: string) => {
          out.say('Press Enter to open it in the browser on this machine.');
          prompt.once('line', () => void openInBrowser(url));
        }
      : undefined;
    let tokens;
    try {
      tokens = await deviceLogin(meta, settings, httpTransport, out, {
        scope: flags.scope,
        clock: realClock,
        signal,
        offerBrowser,
        qr: flags.qr,
        tokenTransport,
      });
    } finally {
      prompt?.close();
    }
    session = await storeSignIn(plan, settings, tokens, undefined, out, signal);
  }
  // The profile remembers where it signed in: later commands on it need no --issuer.
  await rememberProfile(settings).catch((err: unknown) => {
    if (!(err instanceof CliError)) throw err;
    out.say(`Could not remember the profile's issuer (${err.message}); pass --issuer to the next commands.`);
  });
  if (flags.json) {
    out.data(
      `${JSON.stringify({ profile: settings.profile, issuer: settings.issuer, subject: session.subject, username: session.username, ...(session.kind && { kind: session.kind }), scope: session.scope, ...(session.resource && { resource: session.resource }), token_type: session.token_type, expires_at: new Date(session.expires_at).toISOString() })}\n`,
    );
  } else {
    const profile = settings.profile === DEFAULT_PROFILE ? '' : ` (profile ${settings.profile})`;
    const who =
      session.kind === 'application'
        ? ` as the application ${session.client_id}`
        : session.kind === 'workload'
          ? ` as the CI workload ${session.subject ?? ''}`.trimEnd()
          : session.username
            ? ` as ${session.username}`
            : '';
    out.data(`Signed in to ${settings.issuer}${who}${profile}.\n`);
  }
  if (session.dpop_jkt) out.say(BOUND_TOKEN_USE);
}

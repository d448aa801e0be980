import type { TokenResponse } from '@authcli/protocol';
import type { ClientSettings } from '../config.js';
import type { Transport } from '../http.js';
import { OAuthClient } from '../oauth/client.js';
import type { ServerMetadata } from '../oauth/discovery.js';
import type { Output } from '../output.js';
import { pollForTokens, type Clock } from './poll.js';

/** The terminal QR code of `text` when it fits in `columns` (any width when unknown), else undefined. */
async function fittingQr(text: string, columns: number | undefined): Promise<string | undefined> {
  const { qrMatrix, qrWidth, renderQr } = await import('../qr.js');
  const matrix = qrMatrix(text);
  return columns === undefined || qrWidth(matrix) <= columns ? renderQr(matrix) : undefined;
}

function mmss(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * Device authorization grant (RFC 8628) for a terminal: ask for codes, show
 * the user code, the verification URI and a QR code of the complete URI
 * (§3.3.1; on a terminal, else the complete URI as text),
 * count down to expiry, and poll until the person approves or denies.
 */
export async function deviceLogin(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  out: Output,
  opts: {
    scope: string;
    clock: Clock;
    signal?: AbortSignal | undefined;
    offerBrowser?: ((url: string) => void) | undefined;
    /** Draw the QR code (`--no-qr` turns it off); it is drawn only where colours reach a terminal. */
    qr?: boolean | undefined;
    /** How the token endpoint is polled: with DPoP proofs when the sign-in uses DPoP (default `transport`). */
    tokenTransport?: Transport | undefined;
  },
): Promise<TokenResponse> {
  const client = new OAuthClient({ meta, settings, transport, tokenTransport: opts.tokenTransport });
  const d = await client.deviceAuthorization(opts.scope);
  const expiresAt = opts.clock.now() + d.expires_in * 1000;
  const complete = d.verification_uri_complete ?? d.verification_uri;

  out.say(`To sign in, open ${d.verification_uri} on any device and enter the code:\n`);
  out.say(`    ${out.bold(d.user_code)}\n`);
  // A QR code needs its explicit colours to scan; in a log or pipe it is noise, so the URL stands alone there.
  // Drawn only where it fits: a code wider than the terminal wraps, and a wrapped code does not scan.
  const qr = opts.qr !== false && out.colour ? await fittingQr(complete, out.columns()) : undefined;
  if (qr) {
    out.say(`Or scan this QR code:\n\n${qr}\n`);
  } else if (complete !== d.verification_uri) {
    out.say(`Or open ${complete} (the code is filled in).\n`);
  }
  opts.offerBrowser?.(complete);

  const tick = out.tty
    ? setInterval(() => {
        const left = mmss(expiresAt - opts.clock.now());
        out.status(`Waiting for approval… the code expires in ${left}`, `Waiting… expires in ${left}`);
      }, 1000)
    : undefined;
  try {
    return await pollForTokens(
      () => client.pollDeviceToken(d.device_code),
      { interval: d.interval ?? 5, expiresAt },
      opts.clock,
      opts.signal,
      {
        onWait: ({ reason, intervalSeconds }) => {
          if (reason === 'slow_down' || reason === 'rate_limited')
            out.say(`The server asked to poll more slowly: every ${intervalSeconds} s from now on.`);
          if (reason === 'network') out.say('The server did not answer; retrying…');
        },
      },
    );
  } finally {
    if (tick) clearInterval(tick);
    out.endStatus();
  }
}

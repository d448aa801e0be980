import type { TokenResponse } from '@authcli/protocol';
import type { ClientSettings } from '@authcli/client/internal/config.js';
import type { Transport } from '@authcli/client/internal/http.js';
import type { ServerMetadata } from '@authcli/client/internal/oauth/discovery.js';
import type { Output } from '../output.js';
import { deviceFlow } from '@authcli/client/internal/device/flow.js';
import type { Clock } from '@authcli/client/internal/device/poll.js';

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
  let expiresAt = 0;
  let tick: ReturnType<typeof setInterval> | undefined;
  const tokens = deviceFlow(meta, settings, transport, {
    scope: opts.scope,
    clock: opts.clock,
    signal: opts.signal,
    tokenTransport: opts.tokenTransport,
    onDeviceCode: async (d) => {
      expiresAt = opts.clock.now() + d.expiresIn * 1000;
      const complete = d.verificationUriComplete ?? d.verificationUri;
      out.say(`To sign in, open ${d.verificationUri} on any device and enter the code:\n`);
      out.say(`    ${out.bold(d.userCode)}\n`);
      // A QR code needs its explicit colours to scan; in a log or pipe it is noise, so the URL stands alone there.
      // Drawn only where it fits: a code wider than the terminal wraps, and a wrapped code does not scan.
      const qr = opts.qr !== false && out.colour ? await fittingQr(complete, out.columns()) : undefined;
      if (qr) {
        out.say(`Or scan this QR code:\n\n${qr}\n`);
      } else if (complete !== d.verificationUri) {
        out.say(`Or open ${complete} (the code is filled in).\n`);
      }
      opts.offerBrowser?.(complete);
      tick = out.tty
        ? setInterval(() => {
            const left = mmss(expiresAt - opts.clock.now());
            out.status(`Waiting for approval… the code expires in ${left}`, `Waiting… expires in ${left}`);
          }, 1000)
        : undefined;
    },
    onWait: ({ reason, intervalSeconds }) => {
      if (reason === 'slow_down' || reason === 'rate_limited')
        out.say(`The server asked to poll more slowly: every ${intervalSeconds} s from now on.`);
      if (reason === 'network') out.say('The server did not answer; retrying…');
    },
  });
  try {
    return await tokens;
  } finally {
    if (tick) clearInterval(tick);
    out.endStatus();
  }
}

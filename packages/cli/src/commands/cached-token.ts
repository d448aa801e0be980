// The fast path of `authcli token`, run by bin/authcli.cjs (built as dist/token-fast.cjs) before the ES module
// build and commander load: scripts and kubectl call
// `authcli token` constantly, so with a valid cached token it loads only the settings, the
// credentials and the output format (no commander, HTTP, JOSE or lock code).
import { createRequire } from 'node:module';
import { resolveSettings } from '@authcli/client/internal/config.js';
import { readSession } from '@authcli/client/internal/credentials.js';
import { boundTokenNotice, needsRefresh, renderToken, tokenFormat } from '@authcli/client/internal/token-output.js';

/**
 * When the command line is one this understands and the cached token is good
 * for the asked format, prints it and returns true; anything else (a refresh,
 * an error, `--help`, `--client-secret`, an option it does not know) returns
 * false and goes through commander to `token` in session.ts, which answers
 * the same for a valid token.
 */
export async function cachedToken(argv: string[]): Promise<boolean> {
  try {
    // Through require, as node:fs below: an ES import of node:util reads its whole namespace.
    const { parseArgs } = createRequire(import.meta.url)('node:util') as typeof import('node:util');
    const { values } = parseArgs({
      args: argv,
      options: {
        profile: { type: 'string' },
        issuer: { type: 'string' },
        'client-id': { type: 'string' },
        json: { type: 'boolean' },
        format: { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
    const format = tokenFormat(values);
    // The profile's slot, as the full path finds it: `--profile`, `AUTHCLI_PROFILE`, its issuer from
    // config.json or its last sign-in (profiles.json). A bad profile name is left to the full path to say.
    const settings = await resolveSettings({ profile: values.profile, issuer: values.issuer, clientId: values['client-id'] });
    const session = await readSession(settings.slot);
    const now = Date.now();
    if (!session || needsRefresh(session, format, now)) return false;
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    writeOut(fs, 1, renderToken(session, format, now));
    const notice = boundTokenNotice(session, format, () =>
      (createRequire(import.meta.url)('node:tty') as typeof import('node:tty')).isatty(2),
    );
    if (notice) writeOut(fs, 2, notice);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes straight to fd 1 (or 2): process.stdout, like an ESM import of node:fs (its
 * namespace reads every lazy export), loads the stream classes for this one
 * write; require('node:fs') does not. A pipe that would block (EAGAIN) gets
 * the rest through the stream.
 */
function writeOut(fs: typeof import('node:fs'), fd: 1 | 2, text: string): void {
  const bytes = Buffer.from(text);
  let written = 0;
  try {
    while (written < bytes.length) written += fs.writeSync(fd, bytes, written);
  } catch {
    (fd === 1 ? process.stdout : process.stderr).write(bytes.subarray(written));
  }
}

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

/** Where tests leave screenshots for a reviewer (git-ignored). */
export const OUTPUT_DIR = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../test-output');

/** Debian's Chromium headless shell (scripts/ensure-chromium.mjs says why), with nothing that reaches past this machine. */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  return chromium.launch({
    executablePath: process.env.AUTHCLI_CHROMIUM ?? '/usr/bin/chromium-headless-shell',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export function screenshotPath(name: string): string {
  return join(OUTPUT_DIR, `${name}.png`);
}

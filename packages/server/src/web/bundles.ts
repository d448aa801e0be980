import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';

/** The bundled browser modules: dist/public/<name>.js of this package (built by tsup, see tsup.config.ts). */
function bundlePath(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return join(dir, 'dist', 'public', `${name}.js`);
}

const loaded = new Map<string, Promise<string>>();

/**
 * Sends a browser module from the same origin (the pages' CSP is `script-src 'self'`).
 * `no-cache`: the URL carries no version, so a browser revalidates after an upgrade.
 */
export async function sendBundle(reply: FastifyReply, name: string): Promise<string> {
  let text = loaded.get(name);
  if (!text) {
    text = readFile(bundlePath(name), 'utf8');
    loaded.set(name, text);
  }
  reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8');
  return text;
}

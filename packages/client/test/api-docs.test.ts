// docs/client-api is TypeDoc's reading of the public types (packages/client/typedoc.json): `pnpm docs:client`
// writes it, and this test fails when the committed pages are not what the types make now.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const pkg = join(import.meta.dirname, '..');
const committed = join(pkg, '../../docs/client-api');

describe('docs/client-api', () => {
  it('is what TypeDoc makes of the public types (`pnpm docs:client` writes it)', () => {
    const out = mkdtempSync(join(tmpdir(), 'authcli-api-docs-'));
    try {
      execFileSync(process.execPath, [join(pkg, 'node_modules/typedoc/bin/typedoc'), '--out', out, '--logLevel', 'Warn'], {
        cwd: pkg,
        stdio: 'pipe',
      });
      const files = readdirSync(out).sort();
      expect(readdirSync(committed).sort()).toEqual(files);
      for (const file of files) {
        expect(readFileSync(join(committed, file), 'utf8'), `docs/client-api/${file}: run pnpm docs:client`).toBe(
          readFileSync(join(out, file), 'utf8'),
        );
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});

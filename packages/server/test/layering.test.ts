import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome');

/** The web/ modules app.ts registers routes from: `import { xRoutes } from './web/NAME.js'`. */
async function webRouteModules(): Promise<string[]> {
  const app = await readFile(join(ROOT, 'packages/server/src/app.ts'), 'utf8');
  return [...app.matchAll(/import \{ \w+Routes \} from '\.\/web\/([\w-]+)\.js'/g)].map((m) => m[1]!).sort();
}

/** Biome's verdict on one web/ module that imports `from`, linted with the repository's biome.jsonc. */
async function lintWebImport(from: string): Promise<{ failed: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'authcli-layering-'));
  try {
    await copyFile(join(ROOT, 'biome.jsonc'), join(dir, 'biome.jsonc'));
    await mkdir(join(dir, 'packages/server/src/web'), { recursive: true });
    await writeFile(join(dir, 'packages/server/src/web/probe.tsx'), `import * as m from '${from}';\n\nexport const used = m;\n`);
    return await new Promise((resolve) => {
      execFile(BIOME, ['lint', '--vcs-enabled=false', 'packages/server/src/web/probe.tsx'], { cwd: dir }, (err, stdout, stderr) =>
        resolve({ failed: err !== null, output: `${stdout}${stderr}` }),
      );
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The server's layers (ARCHITECTURE.md): a web/ route module is wired by app.ts only, so no other page module may
 * import one. The lint rule names them in a list (biome.jsonc); these tests keep the list whole and prove it bites.
 */
describe('the layering lint', () => {
  it('every web/ module app.ts registers routes from is one the lint forbids importing, and importing it fails the lint', async () => {
    const routes = await webRouteModules();
    expect(routes).toEqual(expect.arrayContaining(['account', 'connectors', 'passkeys', 'pages']));
    const results = await Promise.all(routes.map(async (name) => [name, await lintWebImport(`./${name}.js`)] as const));
    for (const [name, result] of results) {
      expect(result.failed, `importing ./${name}.js from web/ should fail the lint`).toBe(true);
      expect(result.output).toContain('wired by app.ts only');
    }
  });

  it('shared page code (views, session, continuation, webauthn) may be imported by any web/ module', async () => {
    for (const shared of ['./views.js', './session.js', './continuation.js', './webauthn.js']) {
      const result = await lintWebImport(shared);
      expect(result.failed, `${shared}: ${result.output}`).toBe(false);
    }
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** The workspace's packages (pnpm-workspace.yaml) and the folders whose sources each owns. */
const PACKAGES: { dir: string; sources: string[] }[] = [
  { dir: 'packages/pkce', sources: ['src', 'test'] },
  { dir: 'packages/protocol', sources: ['src', 'test'] },
  { dir: 'packages/server', sources: ['src', 'test'] },
  { dir: 'packages/cli', sources: ['src', 'test'] },
  { dir: 'test', sources: ['.'] },
  { dir: 'test/support', sources: ['.'] },
  { dir: 'bench', sources: ['.'] },
];

/** The workspace root's tools (vitest, TypeScript, Biome, Node's types): every package's tests run under them. */
const ROOT_TOOLS = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies,
).filter((name) => !name.startsWith('@authcli/'));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    // A folder that is a package of its own (test/support under test), or built or installed, is not this package's.
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'dist' || isPackage(path) ? [] : sources(path);
    // This file's own examples are not imports.
    if (path === import.meta.filename) return [];
    return /\.(ts|tsx|mts|mjs|js|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

function isPackage(dir: string): boolean {
  return readdirSync(dir).includes('package.json');
}

/** A package name, maybe with a subpath (Node's `node:` modules do not match). */
const PACKAGE_NAME = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w./@-]*)?$/;

/** The package names a source file imports (`from 'x'`, `import('x')`, `require('x')`), without Node's own modules. */
function importedPackages(text: string): string[] {
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\(\s*|^import\s+)'([^'./][^']*)'/gm)].map((m) => m[1]!);
  return specifiers
    .filter((s) => PACKAGE_NAME.test(s) && !builtinModules.includes(s))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!));
}

/**
 * Every package a workspace package's sources import is declared in its own package.json: found through its own
 * node_modules, never by luck through a parent folder's (test/support sits inside test/, whose node_modules would
 * otherwise answer for it).
 */
describe('declared dependencies', () => {
  it.each(PACKAGES)('$dir imports only what its package.json declares', ({ dir, sources: folders }) => {
    const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    const declared = new Set([
      manifest.name as unknown as string,
      ...ROOT_TOOLS,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.devDependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const top = join(ROOT, dir);
    const undeclared = folders
      .flatMap((f) => sources(join(top, f)))
      .flatMap((file) =>
        importedPackages(readFileSync(file, 'utf8'))
          .filter((name) => !declared.has(name))
          .map((name) => `${relative(ROOT, file)}: ${name}`),
      );
    expect(undeclared).toEqual([]);
  });
});

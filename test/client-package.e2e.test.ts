// @authcli/client as npm installs it: `pnpm pack`ed, installed with npm into an empty project, and loaded through
// both of its entries, with nothing of the workspace (no workspace: or test-only dependency) in what is packed.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

describe('@authcli/client packed and installed with npm', () => {
  let dir: string;
  let project: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authcli-pack-'));
    execFileSync('npx', ['-y', 'pnpm@10', 'pack', '--pack-destination', dir], { cwd: join(root, 'packages/client'), stdio: 'pipe' });
    project = join(dir, 'tool');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'tool', private: true, version: '1.0.0' }));
    const tarball = execFileSync('sh', ['-c', `ls ${dir}/*.tgz`], { encoding: 'utf8' }).trim();
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
      cwd: project,
      stdio: 'pipe',
      timeout: 240_000,
    });
  }, 300_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('its package.json names only registry packages, and the tarball holds the build and the README, no sources', () => {
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/@authcli/client/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    for (const [name, range] of Object.entries(installed.dependencies)) {
      expect(range, name).not.toMatch(/^workspace:/);
      expect(name).not.toMatch(/^@authcli\//);
    }
    const files = execFileSync('find', ['.', '-type', 'f'], { cwd: join(project, 'node_modules/@authcli/client'), encoding: 'utf8' });
    expect(files).toContain('./dist/index.js');
    expect(files).toContain('./dist/index.cjs');
    expect(files).toContain('./dist/index.d.ts');
    expect(files).toContain('./README.md');
    expect(files).not.toMatch(/\.\/src\//);
  });

  it('loads with require and with import, and answers for a profile signed out', () => {
    const script = `
      const viaRequire = require('@authcli/client');
      import('@authcli/client').then(async (viaImport) => {
        const names = (m) => ['signIn', 'getToken', 'signOut', 'status', 'authorization', 'AuthcliError'].map((n) => typeof m[n]).join(',');
        const seen = await viaImport.status({ issuer: 'https://id.example.com', clientId: 'tool', storage: 'memory' });
        let code;
        try { await viaRequire.getToken({ issuer: 'https://id.example.com', clientId: 'tool', storage: 'memory' }); } catch (e) { code = e instanceof viaRequire.AuthcliError && e.code; }
        console.log(JSON.stringify({ require: names(viaRequire), import: names(viaImport), signedIn: seen.signedIn, code }));
      });`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: project, encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toEqual({
      require: 'function,function,function,function,function,function',
      import: 'function,function,function,function,function,function',
      signedIn: false,
      code: 'signed_out',
    });
  });

  it('its types compile in a TypeScript project of the tool', () => {
    writeFileSync(
      join(project, 'tool.ts'),
      `import { getToken, signIn, type DeviceCode } from '@authcli/client';
const show = (c: DeviceCode): void => console.error(c.userCode, c.verificationUri);
export async function token(): Promise<string> {
  await signIn({ issuer: 'https://id.example.com', clientId: 'tool', flow: 'device', onDeviceCode: show });
  return getToken({ issuer: 'https://id.example.com', clientId: 'tool', minValidity: 60 });
}
`,
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    execFileSync(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        '--typeRoots',
        join(root, 'node_modules/@types'),
        'tool.ts',
      ],
      { cwd: project, stdio: 'pipe' },
    );
  });
});

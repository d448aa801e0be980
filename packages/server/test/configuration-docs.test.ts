// docs/configuration.md cannot drift from the code: its tables are made from the settings lists
// (config/settings.ts, the CLI's settings.ts) and `pnpm docs:config` rewrites them (vitest -u on this file);
// every environment variable the sources read must be in a table; each default and range is the one the
// code uses; the abuse limits table of docs/security.md has the counts of config/defaults.ts.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI_SETTINGS } from '../../cli/src/settings.js';
import { DEFAULT_CLIENT_ID, DEFAULT_ISSUER, DEFAULT_PROFILE, resolveSettings } from '../../client/src/config.js';
import { CLI_DEFAULT_ISSUER } from '../src/operator/banner.js';
import { storageChoice } from '../../client/src/storage/select.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { LIMITS } from '../src/config/defaults.js';
import { describeConfig } from '../src/config/describe.js';
import { SERVER_SETTINGS } from '../src/config/settings.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DOC = join(root, 'docs/configuration.md');

/**
 * Names the sources hold that are not settings: nothing reads them from the environment (checked below).
 * Each must still occur in the sources, so a stale entry is noticed.
 */
const NOT_SETTINGS: Record<string, string> = {
  AUTHCLI_VERSION__: "the CLI's version, a build-time define (`__AUTHCLI_VERSION__`, packages/cli/tsup.config.ts)",
  AUTHCLI_SERVER_VERSION__: "the server's version, a build-time define (packages/server/tsup.config.ts)",
  AUTHCLI_BAD_FORM: 'the code of the error a malformed form body raises (http/form.ts)',
  AUTHCLI_BAD_JSON: 'the code of the error a malformed JSON body raises (http/json.ts)',
};

/** The text of every source file of packages/<name>/src and packages/<name>/bin. */
function sources(): { file: string; text: string }[] {
  const files: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.(ts|tsx|js|cjs|mjs)$/.test(e.name)) files.push({ file: path.slice(root.length), text: readFileSync(path, 'utf8') });
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) for (const sub of ['src', 'bin']) walk(join(root, 'packages', pkg, sub));
  return files;
}

/** Every `AUTHCLI_*` name, and every variable read through `process.env` or an `env` object, with a file that has it. */
function namesInSources(): { authcli: Map<string, string>; read: Map<string, string> } {
  const authcli = new Map<string, string>();
  const read = new Map<string, string>();
  const ENV_READS = [
    /\b(?:process\.env|env)\.([A-Z_][A-Z0-9_]*)/g,
    /\b(?:process\.env|env)\[\s*['"`]([A-Z_][A-Z0-9_]*)['"`]\s*\]/g,
    /\benv[A-Z]\w*\(\s*env\s*,\s*['"`]([A-Z_][A-Z0-9_]*)['"`]/g,
    /\{([^}]*)\}\s*=\s*process\.env\b/g,
  ];
  for (const { file, text } of sources()) {
    for (const m of text.matchAll(/AUTHCLI_[A-Z0-9_]+/g)) if (!authcli.has(m[0])) authcli.set(m[0], file);
    for (const re of ENV_READS) {
      for (const m of text.matchAll(re)) {
        for (const name of m[1]!.split(',').map((n) => n.trim().split(/[\s:=]/)[0]!)) {
          if (/^[A-Z_][A-Z0-9_]*$/.test(name) && !read.has(name)) read.set(name, file);
        }
      }
    }
  }
  return { authcli, read };
}

const code = (v: string) => `\`${v}\``;

/** A Markdown table of settings: variable, flag, default, meaning (with the whole numbers accepted). */
function settingsTable(
  rows: readonly {
    env: string | readonly string[];
    flag?: string;
    default: string;
    meaning: string;
    range?: { min: number; max: number };
  }[],
) {
  const lines = ['| variable | flag | default | meaning |', '|---|---|---|---|'];
  for (const s of rows) {
    const range = s.range ? ` Accepted: ${s.range.min}-${s.range.max}.` : '';
    lines.push(`| ${[s.env].flat().map(code).join(', ')} | ${s.flag ? code(s.flag) : ''} | ${s.default} | ${s.meaning}${range} |`);
  }
  return lines.join('\n');
}

/** `2592000 s` as `2592000 s (30 days)`: long durations also in the unit a person reads. */
function readable(value: string): string {
  const s = /^(\d+) s\b/.exec(value)?.[1];
  if (s === undefined || Number(s) < 120) return value;
  const [n, unit] = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
  ].find(([n]) => Number(s) % (n as number) === 0 && Number(s) >= (n as number))! as [number, string];
  const count = Number(s) / n;
  return value.replace(/^\d+ s\b/, (m) => `${m} (${count} ${unit}${count === 1 ? '' : 's'})`);
}

/** What `authcli-server config` prints as built in (no setting), and the abuse limits' defaults. */
function builtInTable() {
  const lines = ['| name (`authcli-server config`) | value |', '|---|---|'];
  for (const e of describeConfig(loadConfig({}, {}), {}, {})) {
    if (e.source === 'built-in') lines.push(`| ${code(e.name)} | ${readable(e.value)} |`);
    else if (e.name.startsWith('limit.')) lines.push(`| ${code(e.name)} | ${e.value} (\`AUTHCLI_LIMITS\`) |`);
  }
  return lines.join('\n');
}

/** The document with the text between each pair of markers made anew. */
function regenerated(doc: string): string {
  const tables: Record<string, string> = {
    server: settingsTable(SERVER_SETTINGS),
    cli: settingsTable(CLI_SETTINGS),
    'built-in': builtInTable(),
  };
  let out = doc;
  for (const [name, table] of Object.entries(tables)) {
    const start = `<!-- generated: ${name} (pnpm docs:config) -->`;
    const end = `<!-- end: ${name} -->`;
    const from = out.indexOf(start);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`docs/configuration.md lacks the markers ${start} ... ${end}`);
    out = `${out.slice(0, from + start.length)}\n${table}\n${out.slice(to)}`;
  }
  return out;
}

describe('docs/configuration.md', () => {
  const documented = new Set([...SERVER_SETTINGS.map((s) => s.env), ...CLI_SETTINGS.flatMap((s) => s.env)]);
  const { authcli, read } = namesInSources();

  it('holds the tables made from the settings lists (`pnpm docs:config` writes them)', async () => {
    const doc = readFileSync(DOC, 'utf8');
    await expect(regenerated(doc), 'docs/configuration.md is not what `pnpm docs:config` makes: run it').toMatchFileSnapshot(DOC);
  });

  it('every environment variable the sources read, and every AUTHCLI_ name, is in a table', () => {
    const missing = [...new Set([...authcli.keys(), ...read.keys()])]
      .filter((name) => !documented.has(name) && !Object.hasOwn(NOT_SETTINGS, name))
      .map((name) => `${name} (${authcli.get(name) ?? read.get(name)})`);
    expect(missing, 'read by the code, missing from config/settings.ts or packages/cli/src/settings.ts').toEqual([]);
    // Settings documented before the code that reads them lands (AUTHCLI_PASSWORD_HASH_COST) are fine.
  });

  it('the names that are not settings are still in the sources, and none is read from the environment', () => {
    for (const name of Object.keys(NOT_SETTINGS)) {
      expect(authcli.has(name), `${name}: no longer in the sources; drop it from NOT_SETTINGS`).toBe(true);
      expect(read.has(name), `${name} is read from the environment: document it`).toBe(false);
      expect(documented.has(name)).toBe(false);
    }
  });

  it('each server default is what loadConfig builds from an empty environment and no flags', () => {
    const config = loadConfig({}, {});
    for (const s of SERVER_SETTINGS) if (s.loaded) expect(s.loaded(config), s.env).toBe(s.default);
    expect(config.limits).toEqual(LIMITS);
  });

  it('each range is what loadConfig accepts', () => {
    for (const s of SERVER_SETTINGS) {
      if (!s.range || !read.has(s.env)) continue; // documented ahead of its code: checked once the code reads it
      const { min, max } = s.range;
      for (const ok of [min, max]) expect(() => loadConfig({}, { [s.env]: String(ok) }), `${s.env}=${ok}`).not.toThrow();
      for (const bad of [min - 1, max + 1]) expect(() => loadConfig({}, { [s.env]: String(bad) }), `${s.env}=${bad}`).toThrow(ConfigError);
    }
  });

  it("the CLI's defaults are what it resolves with no flags, no environment and no config file", async () => {
    const home = mkdtempSync(join(tmpdir(), 'authcli-docs-'));
    try {
      const settings = await resolveSettings({}, { XDG_CONFIG_HOME: home });
      expect(settings).toEqual({
        issuer: DEFAULT_ISSUER,
        clientId: DEFAULT_CLIENT_ID,
        clientSecret: undefined,
        profile: DEFAULT_PROFILE,
        slot: DEFAULT_ISSUER,
        // Nothing named the issuer: the CLI says so when the other profiles sign in elsewhere.
        defaultIssuer: true,
      });
      // The server's banner names the CLI's default issuer: the two must agree.
      expect(CLI_DEFAULT_ISSUER).toBe(DEFAULT_ISSUER);
      expect(CLI_SETTINGS.find((s) => s.env.includes('AUTHCLI_ISSUER'))!.default).toBe(code(settings.issuer));
      expect(CLI_SETTINGS.find((s) => s.env.includes('AUTHCLI_CLIENT_ID'))!.default).toBe(code(settings.clientId));
      expect(storageChoice({})).toBe('auto');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('docs/security.md abuse limits', () => {
  it('has a row for every counter, with the count of config/defaults.ts', () => {
    const doc = readFileSync(join(root, 'docs/security.md'), 'utf8');
    for (const [kind, { limit }] of Object.entries(LIMITS)) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${kind}\` |`));
      expect(row, kind).toBeDefined();
      expect(row!.replace(/(\d),(\d{3})/g, '$1$2'), kind).toMatch(new RegExp(`\\b${limit}\\b`));
    }
  });
});

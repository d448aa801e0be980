// The README and the reference stand alone: every relative link of README.md, SECURITY.md, ARCHITECTURE.md
// and docs/*.md names a file of this repository (never one beside it), and a `#` link a heading of its page.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const PAGES = [
  'README.md',
  'SECURITY.md',
  'ARCHITECTURE.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page without its fenced code blocks and code spans, where `[x](y)` is not a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2, ... */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of readFileSync(join(root, page), 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function links(page: string): string[] {
  return [...prose(readFileSync(join(root, page), 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

describe('documentation links', () => {
  it.each(PAGES)('%s: every relative link is a file of this repository, every # a heading', (page) => {
    const problems: string[] = [];
    for (const link of links(page)) {
      if (/^https:\/\//.test(link)) continue;
      if (/^[a-z]+:/i.test(link) || link.startsWith('/')) {
        problems.push(`${link}: not a relative link`);
        continue;
      }
      const [path, fragment] = link.split('#') as [string, string | undefined];
      const target = path === '' ? join(root, page) : resolve(root, dirname(page), path);
      const inRepo = relative(root, target);
      if (inRepo.startsWith('..') || /(^|\/)(node_modules|dist|data|test-output)(\/|$)/.test(inRepo)) {
        problems.push(`${link}: outside the repository's files`);
      } else if (!existsSync(target)) {
        problems.push(`${link}: no such file`);
      } else if (fragment !== undefined) {
        if (!statSync(target).isFile() || !target.endsWith('.md')) problems.push(`${link}: # on a page that is not Markdown`);
        else if (!anchors(inRepo).has(fragment)) problems.push(`${link}: no heading #${fragment} in ${inRepo}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the README's picture is in the repository and small", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    expect(images).toContain('docs/images/device-confirmation.png');
    for (const image of images) expect(statSync(join(root, image)).size, image).toBeLessThan(300 * 1024);
  });

  it('the README stays a guide: at most 400 lines', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(400);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FAVICON_SVG, STYLESHEET } from '../../server/src/web/assets.js';
import { BRAND_MARK, failurePage, PAGE_CSP, PALETTE, signedInPage } from '../src/browser/pages.js';
import { AuthcliError } from '../src/errors.js';

/** The `--name:value` custom properties of the first `:root { … }` block after `from` in a stylesheet. */
function rootProperties(css: string, from = 0): Record<string, string> {
  const block = /:root\s*\{([^}]*)\}/.exec(css.slice(from))![1]!;
  return Object.fromEntries([...block.matchAll(/--([\w-]+)\s*:\s*([^;]+);/g)].map((m) => [m[1]!, m[2]!.trim()]));
}

const styleOf = (html: string) => /<style>([\s\S]*)<\/style>/.exec(html)![1]!;

describe('the loopback result page', () => {
  it('renders who signed in where, escaped, in a card with a heading', () => {
    const { status, html } = signedInPage('<img src=x onerror=alert(1)>', 'https://id.example/?a="b"&c');
    expect(status).toBe(200);
    expect(html).toMatch(/^<!doctype html><html lang="en">/);
    expect(html).toContain('<title>Signed in as &lt;img src=x onerror=alert(1)&gt; · authcli</title>');
    expect(html).toContain('<h1>Signed in as &lt;img src=x onerror=alert(1)&gt;</h1>');
    expect(html).toContain('authcli has verified and stored the sign-in to https://id.example/?a=&quot;b&quot;&amp;c.');
    expect(html).not.toContain('<img');
    expect(html).toContain('You can close this tab and return to the terminal.');
    expect(signedInPage(undefined, 'https://id.example').html).toContain('<h1>Signed in</h1>');
  });

  it('a denial is "Sign-in cancelled"; any other failure "Sign-in failed" with its reason (a bug without its text)', () => {
    expect(failurePage(new AuthcliError('access_denied', 'you denied the sign-in in the browser'))).toMatchObject({
      status: 200,
      html: expect.stringContaining('<h1>Sign-in cancelled</h1>'),
    });
    const failed = failurePage(new AuthcliError('callback', 'the callback repeats <state>'));
    expect(failed.status).toBe(400);
    expect(failed.html).toContain('<h1>Sign-in failed</h1>');
    expect(failed.html).toContain('authcli could not complete the sign-in: the callback repeats &lt;state&gt;.');
    expect(failurePage(new TypeError('secret internals')).html).not.toContain('secret internals');
  });

  it('is self-contained: its CSP loads nothing, and allows its one style by the style’s hash', () => {
    const { html } = signedInPage('alice', 'https://id.example');
    expect(PAGE_CSP).toMatch(/^default-src 'none'; /);
    const hash = createHash('sha256').update(styleOf(html)).digest('base64');
    expect(PAGE_CSP).toContain(`style-src 'sha256-${hash}'`);
    expect(html.match(/<style>/g)).toHaveLength(1);
    // Nothing that would load: no src or href attributes, no url() or @import in the style, no script.
    expect(html).not.toMatch(/\s(src|href)=|url\(|@import|<script|<link/i);
  });

  it("looks like the server's pages: its colours light and dark, its font, card and brand mark", () => {
    const { html } = signedInPage('alice', 'https://id.example');
    const server = {
      light: rootProperties(STYLESHEET),
      dark: rootProperties(STYLESHEET, STYLESHEET.indexOf('prefers-color-scheme: dark')),
    };
    for (const scheme of ['light', 'dark'] as const) {
      for (const [name, value] of Object.entries(PALETTE[scheme]))
        expect(`${scheme} --${name}: ${value}`).toBe(`${scheme} --${name}: ${server[scheme][name]}`);
    }
    const style = styleOf(html);
    const font = /html \{ font: ([^;]+);/.exec(STYLESHEET)![1]!;
    expect(style).toContain(`font: ${font};`);
    const card = /\.card \{([^}]*)\}/.exec(STYLESHEET)![1]!;
    for (const declaration of card
      .split(';')
      .map((d) => d.trim())
      .filter(Boolean))
      expect(style).toContain(declaration);
    const shapes = (svg: string) => svg.match(/<(rect|circle|path)\b[^>]*\/>/g);
    expect(shapes(BRAND_MARK)).toEqual(shapes(FAVICON_SVG));
    expect(html).toContain(BRAND_MARK);
  });
});

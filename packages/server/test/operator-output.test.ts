/**
 * What operator commands print (operator/output.ts): stored text from anyone (a self-registered client_name,
 * a redirect URI, a claim) never reaches the terminal as something it acts on, and a record stays one line.
 */
import { describe, expect, it } from 'vitest';
import { printable, terminalJson } from '../src/operator/output.js';

const HOSTILE = '\u001b]0;owned\u0007\u001b[2J\u001b[H\nauthcli2  public  operator';

describe('operator output', () => {
  it('printable shows C0, DEL and C1 controls as escapes, and keeps one line', () => {
    const shown = printable(HOSTILE);
    expect(shown).toBe('\\x1b]0;owned\\x07\\x1b[2J\\x1b[H\\nauthcli2  public  operator');
    expect(shown).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
    expect(printable('a\r\nb\tc\u007fd\u009be\u0085f')).toBe('a\\r\\nb\\tc\\x7fd\\x9be\\x85f');
  });

  it('printable shows bidi controls, separators and invisible characters as escapes', () => {
    expect(printable('evil\u202Etxt.exe')).toBe('evil\\u202etxt.exe');
    expect(printable('tag\u{e0001}')).toBe('tag\\u{e0001}');
    for (const c of [
      '\u061c',
      '\u200b',
      '\u200d',
      '\u200e',
      '\u200f',
      '\u2028',
      '\u2029',
      '\u202a',
      '\u2066',
      '\u2069',
      '\u2060',
      '\ufeff',
    ]) {
      expect(printable(`a${c}b`)).toBe(`a\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}b`);
    }
  });

  it('printable leaves printable text alone, in any script', () => {
    for (const text of ['Ada Lovelace', 'Zoë Ångström', 'مرحبا', '東京', 'https://rp.example/cb?x=1&y=2', '😀 emoji', '']) {
      expect(printable(text)).toBe(text);
    }
  });

  it('terminalJson escapes what JSON.stringify leaves raw, and parses back to the same value', () => {
    const value = { name: `${HOSTILE}\u009b31m\u202e\u200b`, uris: ['https://a.example/\u2028'] };
    const text = terminalJson(value, 2);
    // Nothing a terminal acts on but the newlines of the indentation.
    expect(text).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
    expect(text).toContain('\\u009b');
    expect(text).toContain('\\u202e');
    expect(JSON.parse(text)).toEqual(value);
    expect(terminalJson({ a: 'plain' })).toBe('{"a":"plain"}');
    // A character outside the BMP is escaped as its two code units, which JSON reads back as one character.
    expect(terminalJson('\u{e0001}')).toBe('"\\udb40\\udc01"');
    expect(JSON.parse(terminalJson('tag\u{e0001}'))).toBe('tag\u{e0001}');
  });
});

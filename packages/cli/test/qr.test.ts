import { describe, expect, it } from 'vitest';
import jsQR from 'jsqr';
import qrcodeTerminal from 'qrcode-terminal';
import { QUIET_ZONE, qrMatrix, renderQr, terminalQr } from '../src/qr.js';
import { DARK_SCHEME, interpret, LIGHT_SCHEME, paint, scanTerminal } from '@authcli/test-support/terminal';

const COMPLETE = 'http://127.0.0.1:8080/device?user_code=BCDF-GHJK';

describe('terminal QR code (ISO/IEC 18004 quiet zone, explicit colours)', () => {
  for (const scheme of [DARK_SCHEME, LIGHT_SCHEME]) {
    it(`scans back to verification_uri_complete on a ${scheme.name} terminal, without inversion`, () => {
      expect(scanTerminal(terminalQr(COMPLETE), scheme)).toBe(COMPLETE);
    });
  }

  it('scans on both schemes for URIs of every length a server may send', () => {
    for (const uri of [
      'https://a.io/d?c=X',
      `${COMPLETE}&x=${'y'.repeat(60)}`,
      `https://login.example.com/activate?user_code=${'W'.repeat(8)}&${'p'.repeat(150)}`,
    ]) {
      const drawn = terminalQr(uri);
      expect(scanTerminal(drawn, DARK_SCHEME), uri).toBe(uri);
      expect(scanTerminal(drawn, LIGHT_SCHEME), uri).toBe(uri);
    }
  });

  it('has a light quiet zone of 4 modules on every side, drawn in white whatever the theme', () => {
    const matrix = qrMatrix(COMPLETE);
    const n = matrix.length;
    const screen = interpret(renderQr(matrix));
    // Two module rows per text row; the last row's lower half is extra quiet zone when the count is odd.
    expect(screen).toHaveLength(Math.ceil((n + 2 * QUIET_ZONE) / 2));
    expect(screen.every((row) => row.length === n + 2 * QUIET_ZONE)).toBe(true);
    // In a dark theme, the white canvas and the black modules are easy to tell from the terminal's own background.
    const cell = 6;
    const img = paint(screen, DARK_SCHEME, cell);
    const box = (pred: (r: number, g: number, b: number) => boolean) => {
      let [top, left, bottom, right] = [Infinity, Infinity, -1, -1];
      for (let y = 0; y < img.height; y++) {
        for (let x = 0; x < img.width; x++) {
          const o = (y * img.width + x) * 4;
          if (pred(img.data[o]!, img.data[o + 1]!, img.data[o + 2]!))
            [top, left, bottom, right] = [Math.min(top, y), Math.min(left, x), Math.max(bottom, y), Math.max(right, x)];
        }
      }
      return { top, left, bottom, right };
    };
    const canvas = box((r, g, b) => r === 255 && g === 255 && b === 255);
    const symbol = box((r, g, b) => r === 0 && g === 0 && b === 0);
    // A module is `cell` pixels square (half of a cell twice as tall as wide).
    expect((symbol.left - canvas.left) / cell).toBe(QUIET_ZONE);
    expect((canvas.right - symbol.right) / cell).toBe(QUIET_ZONE);
    expect((symbol.top - canvas.top) / cell).toBe(QUIET_ZONE);
    expect((canvas.bottom - symbol.bottom) / cell).toBeGreaterThanOrEqual(QUIET_ZONE);
    expect((symbol.right - symbol.left + 1) / cell).toBe(n);
  });

  it('every line sets its own colours and resets them, so nothing bleeds into the rest of the terminal', () => {
    for (const line of terminalQr(COMPLETE).split('\n')) {
      expect(line.startsWith('\x1b[38;5;16m\x1b[48;5;231m')).toBe(true);
      expect(line.endsWith('\x1b[0m')).toBe(true);
      expect(line.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/^[ ▀▄█]+$/);
    }
  });

  it("the test can tell: qrcode-terminal's own renderer (theme colours, 1-module border) does not scan on a light terminal", () => {
    let drawn = '';
    qrcodeTerminal.generate(COMPLETE, { small: true }, (s) => (drawn = s));
    expect(scanTerminal(drawn, LIGHT_SCHEME)).toBeUndefined();
    // It is the inversion: a scanner that tries inverted codes reads the same picture.
    const img = paint(interpret(drawn), LIGHT_SCHEME);
    expect(jsQR.default(img.data, img.width, img.height, { inversionAttempts: 'attemptBoth' })?.data).toBe(COMPLETE);
  });
});

import QRCode from 'qrcode-terminal/vendor/QRCode/index.js';
import QRErrorCorrectLevel from 'qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js';

/** ISO/IEC 18004 §6.3.8: scanners look for at least 4 light modules around the symbol. */
export const QUIET_ZONE = 4;

/**
 * Fixed colours from the xterm 256-colour cube: index 16 is #000000 and 231
 * is #ffffff in every terminal, while the 16 basic colours (30–37, 40–47)
 * and the default colours follow the user's theme (a themed "black" can be
 * light, a themed "white" dark), which is what inverted the old code on
 * light terminals.
 */
const DARK_ON_LIGHT = '\x1b[38;5;16m\x1b[48;5;231m';
const RESET = '\x1b[0m';

/**
 * The module matrix of `text` (true = dark), from the generator bundled in
 * qrcode-terminal. Error correction M (15 %) rather than the package's L:
 * a phone reading a screen has glare and moiré to get through, and the
 * verification URIs are short enough that the symbol stays small.
 */
export function qrMatrix(text: string): boolean[][] {
  const code = new QRCode(-1, QRErrorCorrectLevel.M);
  code.addData(text);
  code.make();
  const n = code.getModuleCount();
  return Array.from({ length: n }, (_, r) => Array.from({ length: n }, (_, c) => code.isDark(r, c)));
}

/**
 * Draws a matrix for a terminal: black modules on white with a 4-module
 * quiet zone, in explicit colours so it reads the same on dark and light
 * themes. Two module rows share one text row (a terminal cell is about
 * twice as tall as wide, so each half is roughly square): the foreground
 * (black) draws the dark halves with ▀ ▄ █, the background (white) shows
 * through a space. Each line resets its colours so nothing bleeds past it.
 */
export function renderQr(matrix: readonly (readonly boolean[])[]): string {
  const size = matrix.length + 2 * QUIET_ZONE;
  const dark = (r: number, c: number) => matrix[r - QUIET_ZONE]?.[c - QUIET_ZONE] === true;
  const lines: string[] = [];
  // An odd row count leaves the last line's lower half outside the symbol: light, more quiet zone.
  for (let r = 0; r < size; r += 2) {
    let line = DARK_ON_LIGHT;
    for (let c = 0; c < size; c++) {
      const top = dark(r, c);
      const bottom = dark(r + 1, c);
      line += top ? (bottom ? '█' : '▀') : bottom ? '▄' : ' ';
    }
    lines.push(line + RESET);
  }
  return lines.join('\n');
}

/** The QR code of `text`, ready to print on a terminal. */
export function terminalQr(text: string): string {
  return renderQr(qrMatrix(text));
}

/** How many columns the drawn code takes: the symbol and its quiet zone on both sides. */
export function qrWidth(matrix: readonly (readonly boolean[])[]): number {
  return matrix.length + 2 * QUIET_ZONE;
}

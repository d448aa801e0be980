/**
 * A terminal, as far as drawing the CLI's output goes: interprets text with
 * ANSI SGR colours, carriage returns and line erases into a grid of cells,
 * then paints each cell as pixels under a colour scheme (default colours and
 * the 16 themeable palette entries), the way a terminal emulator would. QR
 * tests decode the picture with jsQR, so what is checked is what a phone
 * pointed at the screen would see.
 */
// jsqr is CommonJS; its typings describe the function as the `default` export, which it also sets.
import jsQR from 'jsqr';

type Rgb = readonly [number, number, number];

export interface Scheme {
  name: string;
  fg: Rgb;
  bg: Rgb;
  /** The 16 basic colours (SGR 30–37 / 90–97, and 38;5;0–15), as the theme sets them. */
  palette: readonly Rgb[];
}

const hex = (h: string): Rgb => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];

/** A dark theme (Tango-like palette): light grey text on near-black. */
export const DARK_SCHEME: Scheme = {
  name: 'dark',
  fg: hex('#d3d7cf'),
  bg: hex('#1e1e1e'),
  palette: [
    '#2e3436',
    '#cc0000',
    '#4e9a06',
    '#c4a000',
    '#3465a4',
    '#75507b',
    '#06989a',
    '#d3d7cf',
    '#555753',
    '#ef2929',
    '#8ae234',
    '#fce94f',
    '#729fcf',
    '#ad7fa8',
    '#34e2e2',
    '#eeeeec',
  ].map(hex),
};

/**
 * A light theme (Solarized Light): dark text on cream, and a palette where
 * "black" is dark blue-grey and "white" is cream, as many light themes do.
 */
export const LIGHT_SCHEME: Scheme = {
  name: 'light',
  fg: hex('#586e75'),
  bg: hex('#fdf6e3'),
  palette: [
    '#073642',
    '#dc322f',
    '#859900',
    '#b58900',
    '#268bd2',
    '#d33682',
    '#2aa198',
    '#eee8d5',
    '#002b36',
    '#cb4b16',
    '#586e75',
    '#657b83',
    '#839496',
    '#6c71c4',
    '#93a1a1',
    '#fdf6e3',
  ].map(hex),
};

type Colour = { kind: 'default' } | { kind: 'palette'; index: number } | { kind: 'rgb'; rgb: Rgb };

interface Cell {
  ch: string;
  fg: Colour;
  bg: Colour;
  inverse: boolean;
}

const DEFAULT: Colour = { kind: 'default' };

function xterm256(n: number): Colour {
  if (n < 16) return { kind: 'palette', index: n };
  if (n < 232) {
    const levels = [0, 95, 135, 175, 215, 255];
    const i = n - 16;
    return { kind: 'rgb', rgb: [levels[Math.floor(i / 36)]!, levels[Math.floor(i / 6) % 6]!, levels[i % 6]!] };
  }
  const g = 8 + 10 * (n - 232);
  return { kind: 'rgb', rgb: [g, g, g] };
}

/** The screen a terminal shows after receiving `text` (SGR colours, \r, \n, erase in line). */
export function interpret(text: string): Cell[][] {
  const rows: Cell[][] = [[]];
  let row = 0;
  let col = 0;
  let fg: Colour = DEFAULT;
  let bg: Colour = DEFAULT;
  let inverse = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\x1b' && text[i + 1] === '[') {
      const m = /^\x1b\[([0-9;]*)([@-~])/.exec(text.slice(i));
      if (!m) continue;
      i += m[0].length - 1;
      const params = m[1] === '' ? [0] : m[1]!.split(';').map(Number);
      if (m[2] === 'K') {
        // Erase in line: 2 = whole line, 0 = to the end.
        const line = rows[row]!;
        if (params[0] === 2) line.length = 0;
        else if (params[0] === 0) line.length = Math.min(line.length, col);
        continue;
      }
      if (m[2] !== 'm') continue;
      for (let p = 0; p < params.length; p++) {
        const v = params[p]!;
        if (v === 0) [fg, bg, inverse] = [DEFAULT, DEFAULT, false];
        else if (v === 7) inverse = true;
        else if (v === 27) inverse = false;
        else if (v >= 30 && v <= 37) fg = { kind: 'palette', index: v - 30 };
        else if (v >= 90 && v <= 97) fg = { kind: 'palette', index: v - 90 + 8 };
        else if (v >= 40 && v <= 47) bg = { kind: 'palette', index: v - 40 };
        else if (v >= 100 && v <= 107) bg = { kind: 'palette', index: v - 100 + 8 };
        else if (v === 39) fg = DEFAULT;
        else if (v === 49) bg = DEFAULT;
        else if (v === 38 || v === 48) {
          let c: Colour;
          if (params[p + 1] === 5) {
            c = xterm256(params[p + 2]!);
            p += 2;
          } else {
            c = { kind: 'rgb', rgb: [params[p + 2]!, params[p + 3]!, params[p + 4]!] };
            p += 4;
          }
          if (v === 38) fg = c;
          else bg = c;
        }
      }
      continue;
    }
    if (ch === '\r') {
      col = 0;
      continue;
    }
    if (ch === '\n') {
      row++;
      col = 0;
      rows[row] ??= [];
      continue;
    }
    const line = rows[row]!;
    while (line.length < col) line.push({ ch: ' ', fg: DEFAULT, bg: DEFAULT, inverse: false });
    line[col] = { ch, fg, bg, inverse };
    col++;
  }
  return rows;
}

export interface Image {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

/** Paints a screen: each cell `cellWidth` × 2·`cellWidth` pixels, with a 2-cell margin of the theme's background. */
export function paint(screen: Cell[][], scheme: Scheme, cellWidth = 6): Image {
  const cw = cellWidth;
  const ch = 2 * cellWidth;
  const margin = 2;
  const cols = Math.max(1, ...screen.map((r) => r.length)) + 2 * margin;
  const width = cols * cw;
  const height = (screen.length + 2 * margin) * ch;
  const data = new Uint8ClampedArray(width * height * 4);
  const resolve = (c: Colour, dflt: Rgb): Rgb => (c.kind === 'default' ? dflt : c.kind === 'palette' ? scheme.palette[c.index]! : c.rgb);
  const fill = (x0: number, y0: number, w: number, h: number, rgb: Rgb) => {
    for (let y = y0; y < y0 + h; y++) {
      for (let x = x0; x < x0 + w; x++) {
        const o = (y * width + x) * 4;
        data[o] = rgb[0];
        data[o + 1] = rgb[1];
        data[o + 2] = rgb[2];
        data[o + 3] = 255;
      }
    }
  };
  fill(0, 0, width, height, scheme.bg);
  screen.forEach((line, r) => {
    line.forEach((cell, c) => {
      let fg = resolve(cell.fg, scheme.fg);
      let bg = resolve(cell.bg, scheme.bg);
      if (cell.inverse) [fg, bg] = [bg, fg];
      const x = (c + margin) * cw;
      const y = (r + margin) * ch;
      fill(x, y, cw, ch, bg);
      if (cell.ch === '█') fill(x, y, cw, ch, fg);
      else if (cell.ch === '▀') fill(x, y, cw, ch / 2, fg);
      else if (cell.ch === '▄') fill(x, y + ch / 2, cw, ch / 2, fg);
      // Any other visible character: a glyph-sized blot of the foreground.
      else if (cell.ch !== ' ') fill(x + 1, y + ch / 4, cw - 2, ch / 2, fg);
    });
  });
  return { data, width, height };
}

/** What a QR scanner reads in the picture, with no attempt at inverted (light-on-dark) codes. */
export function scanQr(image: Image): string | undefined {
  return jsQR.default(image.data, image.width, image.height, { inversionAttempts: 'dontInvert' })?.data;
}

/** `text` as a terminal under `scheme` would show it, scanned. */
export function scanTerminal(text: string, scheme: Scheme): string | undefined {
  return scanQr(paint(interpret(text), scheme));
}

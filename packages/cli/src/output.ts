/** A stream the CLI writes to: process.stdout/stderr, or a capture in tests. */
export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean | undefined;
  /** A terminal's width, read on every line (the window may be resized meanwhile). */
  columns?: number | undefined;
}

/**
 * The one way commands write (gh's IOStreams): `data` to stdout, for
 * programs (`$(authcli token)`, `--json`); everything people read to
 * stderr. Built once per run from the real streams, or from captures in
 * tests.
 */
export interface Output {
  /** Results for programs, on stdout, as given (the caller ends lines). */
  data(text: string): void;
  /** A line for people, on stderr. */
  say(line: string): void;
  /**
   * Rewrites the current terminal line (countdowns); nothing when stderr is not a terminal. A line as wide
   * as the terminal would wrap, and `\r` would then redraw only its last row: `short` is said instead,
   * cut to the width if even it does not fit.
   */
  status(line: string, short?: string): void;
  endStatus(): void;
  bold(text: string): string;
  /** stderr is a terminal: countdowns and the QR code are drawn. */
  tty: boolean;
  /** Colours may be used on stderr (a terminal, no NO_COLOR, not TERM=dumb). */
  colour: boolean;
  /** The terminal's width in columns, when stderr is a terminal that says. */
  columns(): number | undefined;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: SGR escapes are what is removed.
const SGR = /\x1b\[[0-9;]*m/g;

/** How many columns `text` takes on a terminal: its characters without colour escapes. */
export function visibleWidth(text: string): number {
  return [...text.replace(SGR, '')].length;
}

/**
 * A line for a terminal `columns` wide, broken at spaces so that no row wraps mid-word (a word wider than
 * the terminal, such as a long URL, gets a row of its own, where it stays whole for copying). The line's
 * indentation is kept on every row. A line that fits is returned as it is.
 */
export function wrapLine(line: string, columns: number): string {
  if (visibleWidth(line) <= columns) return line;
  const indent = /^ */.exec(line)![0];
  const rows: string[] = [];
  let row = '';
  for (const word of line.slice(indent.length).split(' ')) {
    if (row && visibleWidth(indent + row) + 1 + visibleWidth(word) > columns) {
      rows.push(indent + row);
      row = word;
    } else {
      row = row ? `${row} ${word}` : word;
    }
  }
  rows.push(indent + row);
  return rows.join('\n');
}

export function createOutput(streams: { stdout: OutStream; stderr: OutStream } = process, env: NodeJS.ProcessEnv = process.env): Output {
  const { stdout, stderr } = streams;
  const tty = stderr.isTTY === true;
  const colour = tty && !env.NO_COLOR && env.TERM !== 'dumb';
  let statusShown = false;
  const columns = () => (tty && stderr.columns && stderr.columns > 0 ? stderr.columns : undefined);
  const clearStatus = () => {
    if (statusShown) stderr.write('\r\x1b[2K');
    statusShown = false;
  };
  return {
    tty,
    colour,
    data: (text) => {
      clearStatus();
      stdout.write(text);
    },
    say: (line) => {
      clearStatus();
      const width = columns();
      stderr.write(
        `${
          width
            ? line
                .split('\n')
                .map((l) => wrapLine(l, width))
                .join('\n')
            : line
        }\n`,
      );
    },
    status: (line, short) => {
      if (!tty) return;
      // The last column is left free: some terminals wrap as soon as it is written.
      const room = (columns() ?? Number.POSITIVE_INFINITY) - 1;
      let shown = visibleWidth(line) <= room || short === undefined ? line : short;
      if (visibleWidth(shown) > room) {
        shown = `${[...shown.replace(SGR, '')]
          .slice(0, Math.max(0, room - 1))
          .join('')
          .replace(/[\s…]+$/, '')}…`;
      }
      stderr.write(`\r\x1b[2K${shown}`);
      statusShown = true;
    },
    endStatus: clearStatus,
    bold: (text) => (colour ? `\x1b[1m${text}\x1b[22m` : text),
    columns,
  };
}

/** The output for people on `stream` (stderr by default), with data on process.stdout. */
export function terminalOutput(stream: OutStream = process.stderr, env: NodeJS.ProcessEnv = process.env): Output {
  return createOutput({ stdout: process.stdout, stderr: stream }, env);
}

// Whether a browser can be opened here, and opening one: the library's (packages/client/src/browser/open.ts).
export { hasDisplay, openInBrowser } from '@authcli/client/internal/browser/open.js';

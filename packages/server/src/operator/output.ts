/**
 * What operator commands print. Names, redirect URIs and claims come from the
 * store, and with open registration from anyone: printed raw, an escape
 * sequence in a client_name sets the terminal's title, clears its screen or
 * forges a row of `apps list`, and a bidi override reverses what follows it.
 * So every line goes out through here, with the characters a terminal acts
 * on shown as escapes (`\x1b`, `\n`, `\u202e`): one record per line, nothing
 * executed. JSON keeps its own escaping and adds the ones JSON.stringify
 * leaves raw (C1 controls, bidi and invisible format characters), still valid
 * JSON that parses to the same value.
 */

/**
 * Control characters (Unicode's Cc: C0, DEL and C1, where U+009B is a CSI on
 * some terminals), format characters (Cf: the bidi controls, zero-width and
 * invisible characters, the BOM) and the line and paragraph separators.
 */
const TERMINAL_UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

const CODE_UNIT = (unit: number) => `\\u${unit.toString(16).padStart(4, '0')}`;

/** `text` with every character a terminal would act on shown as an escape; printable text is left alone. */
export function printable(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const cp = c.codePointAt(0)!;
    if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
    return cp <= 0xffff ? CODE_UNIT(cp) : `\\u{${cp.toString(16)}}`;
  });
}

/** Prints one line on standard output. */
export function say(line: string): void {
  process.stdout.write(`${printable(line)}\n`);
}

/** Prints one line on standard error. */
export function sayError(line: string): void {
  process.stderr.write(`${printable(line)}\n`);
}

/**
 * JSON text for a terminal: JSON.stringify's (which escapes the C0 controls itself), with the rest of the
 * characters above written as `\\u` escapes of their UTF-16 code units, so it stays JSON that parses to the same value.
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(TERMINAL_UNSAFE, (c) =>
    // A raw C0 character here is the indentation's newline: in strings JSON.stringify has escaped them all.
    c < ' ' ? c : Array.from({ length: c.length }, (_, i) => CODE_UNIT(c.charCodeAt(i))).join(''),
  );
}

/** Prints `value` as JSON on standard output (pretty with `indent`). */
export function printJson(value: unknown, indent?: number): void {
  process.stdout.write(`${terminalJson(value, indent)}\n`);
}

/** A text table: a header row, columns padded to their widest cell, each cell printable. */
export function printTable(header: string[], rows: string[][]): void {
  const cells = [header, ...rows].map((row) => row.map(printable));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  for (const row of cells) process.stdout.write(`${row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`);
}

/** What a command that changes something did: `value` as JSON with `--json`, else `line` for people. */
export function reportDone(json: boolean | undefined, value: Record<string, unknown>, line: string): void {
  if (json) printJson(value, 2);
  else say(line);
}

import { describe, expect, it } from 'vitest';
import { createOutput, visibleWidth, wrapLine } from '../src/output.js';

/** A terminal stream `columns` wide that keeps what is written. */
function terminal(columns: number | undefined) {
  const written: string[] = [];
  return { stream: { isTTY: true, columns, write: (t: string) => written.push(t) }, written };
}

describe('output on narrow terminals', () => {
  it('wrapLine breaks at spaces, keeps the indentation, gives a long URL a row of its own, leaves a fitting line alone', () => {
    expect(wrapLine('To sign in, open http://localhost:8080/device on any device and enter the code:', 38)).toBe(
      'To sign in, open\nhttp://localhost:8080/device on any\ndevice and enter the code:',
    );
    expect(wrapLine('  indented words that go on for a while', 20)).toBe('  indented words\n  that go on for a\n  while');
    const url = 'http://127.0.0.1:8080/device?user_code=BCDF-GHJK';
    expect(wrapLine(`Or open ${url} (the code is filled in).`, 38)).toBe(`Or open\n${url}\n(the code is filled in).`);
    expect(wrapLine('fits', 4)).toBe('fits');
    // Colour escapes take no columns.
    expect(visibleWidth('\x1b[1mBCDF-GHJK\x1b[22m')).toBe(9);
    expect(wrapLine('    \x1b[1mBCDF-GHJK\x1b[22m', 13)).toBe('    \x1b[1mBCDF-GHJK\x1b[22m');
  });

  it('say wraps at the width the terminal has now; a pipe or an unknown width gets the line as it is', () => {
    const t = terminal(20);
    const out = createOutput({ stdout: t.stream, stderr: t.stream }, {});
    out.say('one two three four five six');
    t.stream.columns = 80;
    out.say('one two three four five six');
    expect(t.written).toEqual(['one two three four\nfive six\n', 'one two three four five six\n']);
    const pipe: string[] = [];
    createOutput({ stdout: { write: () => true }, stderr: { write: (x: string) => pipe.push(x), columns: 10 } }, {}).say(
      'a b c d e f g h i j k',
    );
    expect(pipe).toEqual(['a b c d e f g h i j k\n']);
  });

  it('status redraws one row: the short form when the long one does not fit, cut to the width if even that does not', () => {
    const t = terminal(38);
    const out = createOutput({ stdout: t.stream, stderr: t.stream }, {});
    out.status('Waiting for approval… the code expires in 9:58', 'Waiting… expires in 9:58');
    t.stream.columns = 60;
    out.status('Waiting for approval… the code expires in 9:57', 'Waiting… expires in 9:57');
    t.stream.columns = 10;
    out.status('Waiting for approval… the code expires in 9:56', 'Waiting… expires in 9:56');
    expect(t.written).toEqual([
      '\r\x1b[2KWaiting… expires in 9:58',
      '\r\x1b[2KWaiting for approval… the code expires in 9:57',
      '\r\x1b[2KWaiting…',
    ]);
    for (const w of t.written) expect(visibleWidth(w.replace('\r\x1b[2K', ''))).toBeLessThan(60);
  });
});

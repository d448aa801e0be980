/** A stream the CLI writes to: process.stdout/stderr, or a capture in tests. */
export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean | undefined;
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
  /** Rewrites the current terminal line (countdowns); nothing when stderr is not a terminal. */
  status(line: string): void;
  endStatus(): void;
  bold(text: string): string;
  /** stderr is a terminal: countdowns and the QR code are drawn. */
  tty: boolean;
  /** Colours may be used on stderr (a terminal, no NO_COLOR, not TERM=dumb). */
  colour: boolean;
}

export function createOutput(streams: { stdout: OutStream; stderr: OutStream } = process, env: NodeJS.ProcessEnv = process.env): Output {
  const { stdout, stderr } = streams;
  const tty = stderr.isTTY === true;
  const colour = tty && !env.NO_COLOR && env.TERM !== 'dumb';
  let statusShown = false;
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
      stderr.write(`${line}\n`);
    },
    status: (line) => {
      if (!tty) return;
      stderr.write(`\r\x1b[2K${line}`);
      statusShown = true;
    },
    endStatus: clearStatus,
    bold: (text) => (colour ? `\x1b[1m${text}\x1b[22m` : text),
  };
}

/** The output for people on `stream` (stderr by default), with data on process.stdout. */
export function terminalOutput(stream: OutStream = process.stderr, env: NodeJS.ProcessEnv = process.env): Output {
  return createOutput({ stdout: process.stdout, stderr: stream }, env);
}

/** Whether a browser can be opened on this machine (no display over SSH or on a bare Linux console). */
export function hasDisplay(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === 'darwin' || platform === 'win32') return !env.SSH_CONNECTION && !env.SSH_TTY;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Opens a URL with the system browser through `open`; false when there is no display or it fails. */
export async function openInBrowser(url: string): Promise<boolean> {
  if (!hasDisplay()) return false;
  try {
    const { default: open } = await import('open');
    const child = await open(url);
    return await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      child.once('spawn', () => resolve(true));
      setTimeout(() => resolve(true), 500).unref();
    });
  } catch {
    return false;
  }
}

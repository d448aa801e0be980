/** Where people read: stderr, so stdout stays clean for `$(authcli token)` and `--json`. */
export interface Output {
  say(line: string): void;
  /** Rewrites the current terminal line (countdowns); nothing when stderr is not a terminal. */
  status(line: string): void;
  endStatus(): void;
  bold(text: string): string;
  tty: boolean;
}

export function terminalOutput(stream: NodeJS.WriteStream = process.stderr, env: NodeJS.ProcessEnv = process.env): Output {
  const tty = stream.isTTY === true;
  const colour = tty && !env.NO_COLOR && env.TERM !== 'dumb';
  let statusShown = false;
  return {
    tty,
    say: (line) => {
      if (statusShown) {
        stream.write('\r\x1b[2K');
        statusShown = false;
      }
      stream.write(`${line}\n`);
    },
    status: (line) => {
      if (!tty) return;
      stream.write(`\r\x1b[2K${line}`);
      statusShown = true;
    },
    endStatus: () => {
      if (statusShown) stream.write('\r\x1b[2K');
      statusShown = false;
    },
    bold: (text) => (colour ? `\x1b[1m${text}\x1b[22m` : text),
  };
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

import { spawn } from 'node:child_process';
import { CLI_BIN } from './cli-process.js';

/**
 * `authcli` (or `bin`, authcli-server's) on a real pseudo-terminal (util-linux `script`): what a person at a terminal gets, colours and
 * all. `columns` sets the terminal's width (`stty cols`), as a narrow pane or window would.
 */
export function runInTerminal(args: string[], env: Record<string, string>, opts: { columns?: number; bin?: string } = {}) {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, opts.bin ?? CLI_BIN, ...args].map(quote).join(' ');
  const sized = opts.columns === undefined ? command : `stty cols ${opts.columns} rows 50; exec ${command}`;
  const child = spawn('script', ['-qfec', sized, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', HOME: env.XDG_CONFIG_HOME ?? '/tmp', TERM: 'xterm-256color', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (d: Buffer) => (screen += d.toString()));
  const exit = new Promise<number | null>((r) => child.once('close', r));
  return {
    screen: () => screen,
    /** Keys typed at the terminal (\x03 is Ctrl-C). */
    type: (keys: string) => child.stdin.write(keys),
    exit,
    waitFor: async (re: RegExp, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(screen)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${re} on the terminal:\n${screen}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return screen.match(re)!;
    },
  };
}

// A real Secret Service for the keychain tests: a private D-Bus session bus (dbus-daemon) and Debian's
// gnome-keyring on it with the login keyring unlocked by a password on stdin, as a desktop session unlocks
// it at sign-in. The bus has no service directories, so nothing is started behind the test's back: when
// the test kills gnome-keyring, the Secret Service is gone. Installed by scripts/ensure-secret-service.mjs.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const KEYRING_PASSWORD = 'login keyring password';

export interface SecretService {
  /** What an `authcli` process needs to reach this Secret Service. */
  env: { DBUS_SESSION_BUS_ADDRESS: string };
  /** The secret stored under service `authcli` (or `service`) and this account, through libsecret's secret-tool; undefined when there is none. */
  lookup(account: string, service?: string): Promise<string | undefined>;
  /** Replaces that secret, as another program using the Secret Service could. */
  store(account: string, secret: string): Promise<void>;
  /** Locks the login keyring (Secret Service `Lock`): writes then need an unlock prompt, which has no display here. */
  lock(): Promise<void>;
  /** Kills gnome-keyring: the bus stays, the Secret Service is gone. */
  kill(): Promise<void>;
  /** A new gnome-keyring with the login keyring unlocked (replacing a running one). */
  unlock(): Promise<void>;
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

export async function startSecretService(): Promise<SecretService> {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-secret-service-'));
  const runtime = join(dir, 'run');
  mkdirSync(runtime, { mode: 0o700 });
  const config = join(dir, 'bus.conf');
  writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${join(runtime, 'bus')}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
`,
  );
  // gnome-keyring keeps its keyrings under XDG_DATA_HOME and its control socket under XDG_RUNTIME_DIR: all in dir.
  const baseEnv = { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_RUNTIME_DIR: runtime };
  const bus = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--print-address=1'], {
    env: baseEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    bus.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!.trim());
    });
    bus.once('error', reject);
    bus.once('exit', (code) => reject(new Error(`dbus-daemon exited (${code})`)));
  });
  const env = { ...baseEnv, DBUS_SESSION_BUS_ADDRESS: address };

  const hasOwner = async (): Promise<boolean> => {
    const { stdout } = await run(
      'dbus-send',
      [
        '--session',
        '--print-reply',
        '--dest=org.freedesktop.DBus',
        '/org/freedesktop/DBus',
        'org.freedesktop.DBus.NameHasOwner',
        'string:org.freedesktop.secrets',
      ],
      { env },
    );
    return /boolean true/.test(stdout);
  };

  let keyring: ChildProcess | undefined;
  const startKeyring = async (): Promise<void> => {
    const previous = keyring;
    const child = spawn('gnome-keyring-daemon', ['--replace', '--foreground', '--unlock', '--components=secrets'], {
      env,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.stdin!.end(KEYRING_PASSWORD);
    keyring = child;
    if (previous) await exited(previous);
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`gnome-keyring-daemon exited (${child.exitCode})`);
      if (await hasOwner()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('gnome-keyring-daemon did not take org.freedesktop.secrets within 5 s');
  };
  await startKeyring();

  return {
    env: { DBUS_SESSION_BUS_ADDRESS: address },
    async lookup(account, service = 'authcli') {
      try {
        const { stdout } = await run('secret-tool', ['lookup', 'service', service, 'username', account], { env });
        return stdout;
      } catch (err) {
        // secret-tool exits 1 with no output when nothing matches.
        if ((err as { code?: number }).code === 1) return undefined;
        throw err;
      }
    },
    async store(account, secret) {
      await new Promise<void>((resolve, reject) => {
        const child = execFile(
          'secret-tool',
          ['store', '--label', `authcli ${account}`, 'service', 'authcli', 'username', account],
          { env },
          (err) => (err ? reject(err) : resolve()),
        );
        child.stdin!.end(secret);
      });
    },
    async lock() {
      await run(
        'dbus-send',
        [
          '--session',
          '--print-reply',
          '--dest=org.freedesktop.secrets',
          '/org/freedesktop/secrets',
          'org.freedesktop.Secret.Service.Lock',
          'array:objpath:/org/freedesktop/secrets/collection/login',
        ],
        { env },
      );
    },
    async kill() {
      const k = keyring;
      keyring = undefined;
      k?.kill('SIGKILL');
      if (k) await exited(k);
      while (await hasOwner()) await new Promise((r) => setTimeout(r, 20));
    },
    unlock: startKeyring,
    async stop() {
      keyring?.kill('SIGTERM');
      bus.kill('SIGTERM');
      await Promise.all([keyring && exited(keyring), exited(bus)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

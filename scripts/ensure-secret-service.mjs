// The keychain tests run a real Secret Service: Debian's gnome-keyring on a private D-Bus session bus, read
// back with secret-tool. Installs the three packages with apt-get when a program is missing and we are root;
// otherwise says what to do.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const NEEDED = {
  '/usr/bin/dbus-daemon': 'dbus',
  '/usr/bin/dbus-send': 'dbus',
  '/usr/bin/gnome-keyring-daemon': 'gnome-keyring',
  '/usr/bin/secret-tool': 'libsecret-tools',
};

const missing = [
  ...new Set(
    Object.entries(NEEDED)
      .filter(([bin]) => !existsSync(bin))
      .map(([, pkg]) => pkg),
  ),
];
if (missing.length > 0) {
  if (process.getuid?.() !== 0) {
    console.error(
      `ensure-secret-service: missing ${missing.join(', ')}; install with: sudo apt-get install -y --no-install-recommends ${missing.join(' ')}`,
    );
    process.exit(1);
  }
  console.log(`ensure-secret-service: installing Debian ${missing.join(', ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { stdio: 'inherit', env });
}
console.log(`ensure-secret-service: ${execFileSync('gnome-keyring-daemon', ['--version'], { encoding: 'utf8' }).trim().split('\n')[0]}`);

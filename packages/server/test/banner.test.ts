import { describe, expect, it } from 'vitest';
import { addUserLines, bannerLines, serverCommandLine, type Started } from '../src/operator/banner.js';

const CHECKOUT = '/home/ada/authcli';
const inCheckout = { script: `${CHECKOUT}/packages/server/bin/authcli-server.cjs`, cwd: CHECKOUT };

const started: Started = {
  version: '0.1.0',
  issuer: 'http://localhost:8080',
  store: `SQLite ${CHECKOUT}/data/authcli.db`,
  listening: '127.0.0.1:8080',
  dashboard: 'http://localhost:8080/dashboard',
  signingThreads: '1',
  users: 0,
  passkeys: 'available',
};

describe("the start banner's way to add the first user", () => {
  it('is the command that runs here: the README\'s "node packages/server/bin/authcli-server.cjs" in a checkout', () => {
    expect(serverCommandLine(inCheckout)).toBe('node packages/server/bin/authcli-server.cjs');
    // Started from another folder: the script's full path (quoted for the shell when it must be).
    expect(serverCommandLine({ ...inCheckout, cwd: '/srv' })).toBe(`node ${CHECKOUT}/packages/server/bin/authcli-server.cjs`);
    expect(serverCommandLine({ script: "/opt/ada's tools/authcli-server.cjs", cwd: '/srv' })).toBe(
      "node '/opt/ada'\\''s tools/authcli-server.cjs'",
    );
    // Run by the name of an installed command (npm's link): the name.
    expect(serverCommandLine({ script: '/usr/local/bin/authcli-server', cwd: '/srv' })).toBe('authcli-server');
  });

  it('names the folder, and the store when it is not the default one (never a PostgreSQL URL, which may hold a password)', () => {
    expect(addUserLines('./data/authcli.db', started.issuer, inCheckout)).toEqual([
      `no users yet: add one from a second terminal, in ${CHECKOUT} (it asks for a password):`,
      '  node packages/server/bin/authcli-server.cjs users add NAME',
      'then sign in at http://localhost:8080/signin',
    ]);
    expect(addUserLines('/var/lib/authcli/authcli.db', started.issuer, inCheckout)[1]).toBe(
      '  node packages/server/bin/authcli-server.cjs users add NAME --database /var/lib/authcli/authcli.db',
    );
    const postgres = addUserLines('postgres://authcli:s3cret@db:5432/authcli', started.issuer, inCheckout);
    expect(postgres[0]).toBe(
      `no users yet: add one from a second terminal, in ${CHECKOUT} with this server's DATABASE_URL (it asks for a password):`,
    );
    expect(postgres.join('\n')).not.toContain('s3cret');
  });

  it('is in the banner only while there is no user', () => {
    const empty = bannerLines(started, './data/authcli.db', inCheckout);
    expect(empty).toContain('  node packages/server/bin/authcli-server.cjs users add NAME');
    expect(empty.at(-1)).toBe('Ctrl-C stops it.');
    const some = bannerLines({ ...started, users: 1 }, './data/authcli.db', inCheckout);
    expect(some.join('\n')).not.toContain('users add');
    expect(some).toContain('sign in at http://localhost:8080/signin');
  });
});

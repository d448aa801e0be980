import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { loopbackIssuerWarning } from '../src/http/loopback.js';
import { startCommand } from '../src/operator/start.js';

/** What `authcli-server start --help` says of an option. */
function help(flag: string): string {
  const cli = new Command('authcli-server');
  startCommand(cli);
  const option = cli.commands.find((c) => c.name() === 'start')!.options.find((o) => o.long === flag);
  return option!.description;
}

/** The issuer `start --host <host> --port 9000` runs with, whether it warns, or the one line it stops with. */
function started(host: string): { issuer: string; warns: boolean } | { stops: string } {
  try {
    const { issuer } = loadConfig({ host, port: '9000' }, {});
    return { issuer, warns: loopbackIssuerWarning(host, issuer) !== undefined };
  } catch (err) {
    if (err instanceof ConfigError) return { stops: err.message };
    throw err;
  }
}

describe('start --help says what start does with the issuer when --issuer is not given', () => {
  it('the help, word for word', () => {
    expect(help('--host')).toBe('address to bind (env HOST, default 127.0.0.1; 0.0.0.0 or :: for every interface)');
    expect(help('--issuer')).toBe(
      'the URL clients use (env AUTHCLI_ISSUER); default http://localhost:<port> when --host is loopback (127.0.0.1, the default; ::1), 0.0.0.0 or :: (start warns for those two), http://<host>:<port> for a name under .localhost; any other --host needs it',
    );
  });

  it('"http://localhost:<port> when --host is loopback (127.0.0.1, the default; ::1)"', () => {
    for (const host of ['127.0.0.1', '::1', '127.0.0.2', 'localhost']) {
      expect(started(host), host).toEqual({ issuer: 'http://localhost:9000', warns: false });
    }
    expect(loadConfig({ port: '9000' }, {}).issuer).toBe('http://localhost:9000');
  });

  it('"0.0.0.0 or :: (start warns for those two)"', () => {
    for (const host of ['0.0.0.0', '::']) expect(started(host), host).toEqual({ issuer: 'http://localhost:9000', warns: true });
  });

  it('"http://<host>:<port> for a name under .localhost"', () => {
    expect(started('auth.localhost')).toEqual({ issuer: 'http://auth.localhost:9000', warns: false });
  });

  it('"any other --host needs it": start stops with one line saying so; given, it is the issuer', () => {
    for (const host of ['192.0.2.7', '10.0.0.5', 'id.example.com', '2001:db8::1']) {
      expect(started(host), host).toEqual({
        stops: `host ${host} is not loopback, so there is no default issuer: set --issuer (or AUTHCLI_ISSUER) to the https URL clients use`,
      });
    }
    expect(loadConfig({ host: '192.0.2.7', issuer: 'https://id.example.com' }, {}).issuer).toBe('https://id.example.com');
    expect(loadConfig({ host: '192.0.2.7' }, { AUTHCLI_ISSUER: 'https://id.example.com' }).issuer).toBe('https://id.example.com');
  });
});

// The CLI's settings, for docs/configuration.md (`pnpm docs:config` writes its table from this list, and
// packages/server/test/configuration-docs.test.ts checks it). Nothing at run time imports this file.
import { DEFAULT_CLIENT_ID, DEFAULT_ISSUER, DEFAULT_PROFILE } from '@authcli/client/internal/config.js';

/** One environment variable the CLI reads, with its flag. */
export interface CliSetting {
  /** The environment variables (one row of the table). */
  env: readonly string[];
  /** The flag that wins over it, when there is one. */
  flag?: string;
  /** The default (Markdown). */
  default: string;
  /** What it does (Markdown). */
  meaning: string;
}

const code = (value: string) => `\`${value}\``;

export const CLI_SETTINGS: readonly CliSetting[] = [
  {
    env: ['AUTHCLI_PROFILE'],
    flag: '--profile',
    default: code(DEFAULT_PROFILE),
    meaning:
      'Which account: each profile has its own issuer, client, sign-in, DPoP keys and lock. A name of 1-64 letters, digits, `.`, `_`, `-`, starting with a letter or digit. See [profiles](cli.md#profiles-several-accounts).',
  },
  {
    env: ['AUTHCLI_ISSUER'],
    flag: '--issuer',
    default: code(DEFAULT_ISSUER),
    meaning:
      "The authorization server: its issuer URL, as its discovery document says it. After the flag, before the profile's `issuer` in `config.json`, the profile's last sign-in and the top-level `issuer`.",
  },
  {
    env: ['AUTHCLI_CLIENT_ID'],
    flag: '--client-id',
    default: code(DEFAULT_CLIENT_ID),
    meaning:
      "The client id the CLI signs in as. After the flag, before the profile's `client_id` in `config.json`, the client of the profile's last sign-in (to the same issuer) and the top-level `client_id`.",
  },
  {
    env: ['AUTHCLI_CLIENT_SECRET'],
    flag: '--client-secret-stdin',
    default: 'none (a public client)',
    meaning:
      "A confidential client's secret, sent with HTTP Basic. `--client-secret-stdin` reads it from a pipe or file and wins; `--client-secret S` works but warns (argv shows in `ps`). Before the profile's `client_secret` in `config.json`, then the top-level one (never remembered in `profiles.json`).",
  },
  {
    env: ['ACTIONS_ID_TOKEN_REQUEST_URL', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN'],
    flag: '--ci',
    default: 'set by GitHub Actions in a job with `permissions: id-token: write`',
    meaning:
      "`login --ci` asks the runner for the job's OIDC token there, with `audience` = `--ci-audience` (default the issuer), and exchanges it under the server's trust policy ([sign in from CI](ci.md)); elsewhere `--ci-token-env NAME` names the variable holding the token.",
  },
  {
    env: ['AUTHCLI_STORAGE'],
    flag: '--storage',
    default: 'the keychain when one answers, else the file',
    meaning:
      '`file` never touches the OS keychain; `keychain` always tries it and warns on every fallback. See [where credentials go](cli.md#where-credentials-are-kept).',
  },
  {
    env: ['AUTHCLI_DEBUG'],
    flag: '--debug',
    default: 'off',
    meaning: '`1`: a failure prints its cause chain and stacks.',
  },
  {
    env: ['AUTHCLI_CONFIG_DIR'],
    default: code('$XDG_CONFIG_HOME/authcli'),
    meaning:
      'The folder itself, when it is elsewhere: the same files as below, in it (an absolute path; anything else is not used). @authcli/client sets it from its `directory` option.',
  },
  {
    env: ['XDG_CONFIG_HOME'],
    default: code('~/.config'),
    meaning:
      'Where the `authcli` folder is: `config.json`, `profiles.json`, `credentials.json`, `dpop-keys.json`, `dpop-nonces.json`, the lock files. Only an absolute path counts.',
  },
  {
    env: ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY'],
    default: 'none',
    meaning: "Proxies for every request, lower-case names too (undici's `EnvHttpProxyAgent`).",
  },
  {
    env: ['NO_COLOR', 'TERM'],
    default: 'unset',
    meaning: '`NO_COLOR` set, or `TERM=dumb`: no colour and no QR code (the complete URL as text instead).',
  },
  {
    env: ['DISPLAY', 'WAYLAND_DISPLAY', 'SSH_CONNECTION', 'SSH_TTY'],
    default: 'as the session sets them',
    meaning:
      'Whether there is a local browser to open: on Linux a display, on macOS and Windows not over SSH. Without one `login` does not offer to open it and `login --browser` suggests the device flow.',
  },
  {
    env: ['DBUS_SESSION_BUS_ADDRESS', 'XDG_RUNTIME_DIR'],
    default: 'as the session sets them',
    meaning:
      'On Linux, where the Secret Service keychain is looked for (the D-Bus session bus); without either no keychain can answer, and the CLI keeps credentials in the file unless `AUTHCLI_STORAGE=keychain`.',
  },
  {
    env: ['KUBERNETES_EXEC_INFO'],
    default: 'set by kubectl',
    meaning: 'With `token --format exec-credential`: an `ExecCredential` of the API version kubectl asks for (`v1`, or `v1beta1`).',
  },
];

import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { readSecretFromStdin, resolveSettings } from '../src/config.js';

const stdin = (text: string, isTTY = false) => Object.assign(Readable.from([Buffer.from(text)]), { isTTY });

describe('--client-secret-stdin', () => {
  it('takes the first line of stdin, with or without a final newline', async () => {
    expect(await readSecretFromStdin(stdin('s3cret\n'))).toBe('s3cret');
    expect(await readSecretFromStdin(stdin('s3cret'))).toBe('s3cret');
    expect(await readSecretFromStdin(stdin('s3cret\r\nignored\n'))).toBe('s3cret');
  });

  it('refuses a terminal (the secret would be echoed) and an empty stdin', async () => {
    await expect(readSecretFromStdin(stdin('s3cret\n', true))).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringMatching(/not from the terminal/),
    });
    await expect(readSecretFromStdin(stdin(''))).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(/stdin is empty/) });
  });

  it('stands where the flag would: before env and config file', async () => {
    const home = mkdtempSync(join(tmpdir(), 'authcli-unit-'));
    try {
      const env = { XDG_CONFIG_HOME: home, AUTHCLI_CLIENT_SECRET: 'from-env' } as NodeJS.ProcessEnv;
      expect((await resolveSettings({ clientSecretStdin: true }, env, stdin('from-stdin\n'))).clientSecret).toBe('from-stdin');
      expect((await resolveSettings({}, env, stdin('unread\n'))).clientSecret).toBe('from-env');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

import { readFileSync } from 'node:fs';
import { ConfigError } from './config.js';

/**
 * The key-encryption key: `AUTHCLI_KEY_ENCRYPTION_KEY` (32 random bytes,
 * base64url or base64) or the file `AUTHCLI_KEY_ENCRYPTION_KEY_FILE` holding
 * the same text (or the 32 raw bytes).
 */
export function readKeyEncryptionKey(env: NodeJS.ProcessEnv): Buffer | undefined {
  const inline = env.AUTHCLI_KEY_ENCRYPTION_KEY;
  const file = env.AUTHCLI_KEY_ENCRYPTION_KEY_FILE;
  if (inline && file) throw new ConfigError('set AUTHCLI_KEY_ENCRYPTION_KEY or AUTHCLI_KEY_ENCRYPTION_KEY_FILE, not both');
  let text: string;
  if (file) {
    let raw: Buffer;
    try {
      raw = readFileSync(file);
    } catch (err) {
      throw new ConfigError(`cannot read AUTHCLI_KEY_ENCRYPTION_KEY_FILE ${file}: ${(err as Error).message}`);
    }
    if (raw.length === 32) return raw;
    text = raw.toString('utf8');
  } else if (inline) {
    text = inline;
  } else {
    return undefined;
  }
  const t = text.trim();
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(t) ? Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64') : Buffer.alloc(0);
  if (key.length !== 32) {
    throw new ConfigError('the key-encryption key must be 32 random bytes, base64url (e.g. `openssl rand -base64 32`)');
  }
  return key;
}

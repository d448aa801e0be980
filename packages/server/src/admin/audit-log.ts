import { closeSync, openSync, writeSync } from 'node:fs';
import type { AuditSettings } from '../config/audit-config.js';
import type { Store } from '../store/store.js';
import { auditJson } from './audit.js';

/**
 * AUTHCLI_AUDIT_LOG: every audit row this process appends, as one JSON line
 * once its transaction committed, to standard output (the server only: the
 * operator CLI's output is its own) or appended to a file (mode 0600) for a
 * log shipper. A write that fails is reported once through `warn` and the
 * rows stay in the store, where `authcli-server audit` reads them.
 * Returns what closes the file.
 */
export function shipAuditLog(store: Store, settings: AuditSettings, options: { stdout: boolean; warn: (m: string) => void }): () => void {
  const target = settings.log;
  if (target === undefined || (target === 'stdout' && !options.stdout)) return () => undefined;
  let fd: number | undefined;
  let failed = false;
  const write = (line: string) => {
    try {
      if (target === 'stdout') {
        process.stdout.write(line);
        return;
      }
      fd ??= openSync(target, 'a', 0o600);
      writeSync(fd, line);
    } catch (err) {
      if (!failed) options.warn(`cannot write the audit log to ${target}: ${(err as Error).message} (the rows stay in the store)`);
      failed = true;
    }
  };
  store.audit.ship((row) => write(`${JSON.stringify(auditJson(row))}\n`));
  return () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };
}

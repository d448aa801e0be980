import { isAbsolute } from 'node:path';
import { AUDIT_RETENTION_BOUNDS_DAYS, AUDIT_RETENTION_DAYS } from './audit-defaults.js';
import { ConfigError } from './config.js';

const DAY = 86_400_000;

export interface AuditSettings {
  /** How long audit rows are kept (AUTHCLI_AUDIT_RETENTION, days). */
  retentionMs: number;
  /** Where each row is written as a JSON line once committed: `stdout`, an absolute file path, or undefined (nowhere). */
  log: string | undefined;
}

/**
 * `AUTHCLI_AUDIT_RETENTION` (whole days, {@link AUDIT_RETENTION_BOUNDS_DAYS}) and `AUTHCLI_AUDIT_LOG` (`stdout`,
 * or an absolute path of a file rows are appended to, for a log shipper).
 */
export function parseAudit(env: NodeJS.ProcessEnv): AuditSettings {
  const rawDays = env.AUTHCLI_AUDIT_RETENTION?.trim() || String(AUDIT_RETENTION_DAYS);
  const days = /^\d{1,5}d?$/.test(rawDays) ? Number(rawDays.replace(/d$/, '')) : Number.NaN;
  const { min, max } = AUDIT_RETENTION_BOUNDS_DAYS;
  if (!(days >= min && days <= max)) {
    throw new ConfigError(
      `AUTHCLI_AUDIT_RETENTION must be ${min}-${max} days (e.g. 365), got ${JSON.stringify(env.AUTHCLI_AUDIT_RETENTION)}`,
    );
  }
  const log = env.AUTHCLI_AUDIT_LOG?.trim() || undefined;
  if (log !== undefined && log !== 'stdout' && !isAbsolute(log)) {
    throw new ConfigError(`AUTHCLI_AUDIT_LOG must be stdout or an absolute file path, got ${JSON.stringify(env.AUTHCLI_AUDIT_LOG)}`);
  }
  return { retentionMs: days * DAY, log };
}

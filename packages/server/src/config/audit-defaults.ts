/** The numbers of the audit trail (store/repositories/audit.ts) and the admin API (admin/), each with its reason. */

const DAY = 86_400_000;

/**
 * How long audit rows are kept (`AUTHCLI_AUDIT_RETENTION`, in days): a year, the history PCI DSS 10.5.1 and
 * most security reviews ask for; within 7 days (a week of incidents to look back on) and 10 years.
 */
export const AUDIT_RETENTION_DAYS = 365;
export const AUDIT_RETENTION_BOUNDS_DAYS = { min: 7, max: 3650 } as const;
export const AUDIT_RETENTION_MS = AUDIT_RETENTION_DAYS * DAY;

/** The most rows one page of the audit trail, or of any admin API list, holds: a page a person or a script reads at once. */
export const AUDIT_PAGE_MAX = 500;
/** Rows in a page when none is asked for. */
export const ADMIN_PAGE_DEFAULT = 100;

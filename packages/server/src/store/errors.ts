/** Failure codes callers switch on; never the message text. */
export type StoreErrorCode = 'duplicate' | 'not_found' | 'unavailable';

/** A store failure callers handle: a duplicate key, a missing row, a store that cannot answer now. */
export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** Whether `err` is a unique or primary-key violation, on either engine (SQLSTATE 23505, SQLite's constraint codes). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

import { Prepared } from '../prepared.js';
import type { Database } from '../schema.js';

/** Every column of a table, checked at compile time so that a prepared insert never leaves one out. */
type AllColumns<T, L extends readonly (keyof T & string)[]> = Exclude<keyof T, L[number]> extends never ? L : never;

/** A prepared INSERT of one whole row of `table`. */
export function insertRow<T extends keyof Database, L extends readonly (keyof Database[T] & string)[]>(
  table: T,
  columns: AllColumns<Database[T], L>,
): Prepared<L[number], never> {
  return new Prepared<L[number], never>(`insert_${table}`, columns, (db, p) =>
    db.insertInto(table).values(Object.fromEntries(columns.map((c) => [c, p[c as L[number]]]))),
  );
}

/** Helpers the in-memory store twins share, so each behaves like Postgres in the same ways. */

/** What a twin throws where Postgres refuses a row by a unique index (SQLSTATE 23505). */
export class UniqueViolation extends Error {
  readonly code = "23505";
  constructor(index: string) {
    super(`duplicate key value violates unique constraint "${index}"`);
  }
}

/** A copy of a stored row, as Postgres hands out a fresh one per read (Dates and arrays copied too). */
export function copyRow<T>(row: T): T {
  return structuredClone(row);
}

import { createHash } from "node:crypto";

/**
 * The SQLSTATE of a database error: its own `code`, or that of its cause (drizzle wraps the
 * driver's error in a DrizzleQueryError whose `cause` is postgres.js's PostgresError or the
 * embedded thread's error, both carrying Postgres' code). Null when there is none: a connection
 * refused or closed, a closed embedded store.
 */
export function sqlStateOf(error: unknown): string | null {
  for (let e = error, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * Whether Postgres refused what was sent rather than failed to run it: SQLSTATE class 22 (data
 * exception, e.g. 22021 for a NUL in text, 22003 for an integer out of range), 23 (integrity
 * constraint) or 54 (program limit, e.g. an index row too large). Such a failure follows the
 * rows, and sending them again fails again. Anything else (no code: the connection; 08, 57,
 * 40, 53 and the rest) is taken as passing, and the rows are kept for the next flush.
 */
export function isDataError(error: unknown): boolean {
  const code = sqlStateOf(error);
  if (code === null) return false;
  const cls = code.slice(0, 2);
  return cls === "22" || cls === "23" || cls === "54";
}

/** A short, stable hash of a value that must not be logged (a subject id): sha256, 16 hex digits. */
export function hashForLog(value: string): string {
  return createHash("sha256").update(value).digest("hex").slice(0, 16);
}

/** What became of each row of a flush that had to be split (`RowOutcomes`). */
export const ROW_KEPT = 0;
export const ROW_WRITTEN = 1;
export const ROW_REFUSED = 2;

/**
 * Writes rows [0, n) through `write(start, end)` (one transaction per call), splitting a range
 * that fails with a data error (`isDataError`) in halves until the rows that fail are found
 * alone: those are marked ROW_REFUSED and passed to `refused` (once each), every other row is
 * written. With k such rows among n, that is at most about 2k·log2(n) transactions, and only
 * after a failure. `outcome[i]` is set as rows are settled; any other failure is thrown at
 * once, leaving the rows not yet written at ROW_KEPT for the caller to put back.
 */
export async function writeSplitting(
  outcome: Uint8Array,
  start: number,
  end: number,
  write: (start: number, end: number) => Promise<void>,
  refused: (row: number, error: unknown) => void,
): Promise<void> {
  if (end <= start) return;
  try {
    await write(start, end);
  } catch (error) {
    if (!isDataError(error)) throw error;
    if (end - start === 1) {
      outcome[start] = ROW_REFUSED;
      refused(start, error);
      return;
    }
    const mid = start + ((end - start) >>> 1);
    await writeSplitting(outcome, start, mid, write, refused);
    await writeSplitting(outcome, mid, end, write, refused);
    return;
  }
  outcome.fill(ROW_WRITTEN, start, end);
}

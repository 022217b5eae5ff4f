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

/** What a twin throws where Postgres refuses text as a uuid (SQLSTATE 22P02). */
export class InvalidUuid extends Error {
  readonly code = "22P02";
  constructor(value: string) {
    super(`invalid input syntax for type uuid: "${value}"`);
  }
}

const UUID = /^[0-9a-f]{4}(-?[0-9a-f]{4}){7}$/i;

/** A uuid column's value as Postgres stores and answers it (lower case, hyphenated), or `InvalidUuid`. */
export function uuidOf(value: string): string {
  const bare = value.startsWith("{") && value.endsWith("}") ? value.slice(1, -1) : value;
  if (!UUID.test(bare)) throw new InvalidUuid(value);
  const hex = bare.replaceAll("-", "").toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const byJsonbOrder = (a: string, b: string): number =>
  Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * A value as a jsonb column hands it back: what JSON keeps of it, each object's members in jsonb's
 * order (shorter keys first, then by their UTF-8 bytes; JavaScript still lists integer-like keys first).
 */
export function asJsonb(value: unknown): unknown {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v === null || typeof v !== "object") return v;
    const entries = Object.entries(v).sort(([a], [b]) => byJsonbOrder(a, b));
    return Object.fromEntries(entries.map(([k, inner]) => [k, sorted(inner)]));
  };
  const text = JSON.stringify(value);
  return text === undefined ? null : sorted(JSON.parse(text));
}

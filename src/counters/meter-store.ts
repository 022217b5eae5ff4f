import type { Loaded, SeenAdmission } from "./meter-values";

export type { SeenAdmission };

/** Which meter in which period: the columns of a `meter_keys` row. */
export interface MeterName {
  readonly tenant: string;
  readonly site: string;
  readonly meter: string;
  readonly period: string;
  /** The key id when already known (a table that flushed or admitted before): skips finding it. */
  readonly keyId?: number | null;
}

/** One meter's rows in a write: count deltas by subject, or seen members (a row each). */
export interface MeterRows {
  readonly name: MeterName;
  readonly seenKind: boolean;
  /** The meter's key id when already known (skips finding or creating it). */
  readonly keyId: number | null;
  readonly subjects: readonly string[];
  readonly deltas: readonly number[];
  readonly items: readonly string[];
}

/** Admissions asked of a store so far, and the statements they shared (/metrics). */
export interface AdmissionTally {
  readonly calls: number;
  readonly statements: number;
}

/**
 * Where meter values are stored: the SQL of the counters, apart from their memory and their
 * flush protocol. `DrizzleMeterStore` is the product's (both stores; drizzle-meter-store.ts, so
 * the counters, among the modules keyed decide runs on, load no drizzle); `MemoryMeterStore`
 * keeps the same rows in maps, for tests of the counters' own logic.
 */
export interface MeterStore {
  /** Every stored counter key (`meterKey`), for an exclusive writer's absence filter. */
  storedKeys(): Promise<string[]>;
  /** The stored rows of these keys; a key never stored is absent from the map. */
  load(keys: readonly string[]): Promise<Map<string, Loaded>>;
  /** A meter's key id, created when missing (another writer may create it meanwhile). */
  keyId(name: MeterName): Promise<number>;
  /**
   * One transaction: count deltas added, seen members inserted once. Returns the key id of each
   * part. A value the store refuses fails the whole write with a data error (`isDataError`).
   */
  write(parts: readonly MeterRows[]): Promise<number[]>;
  /**
   * Adds `item` to a seen meter's stored members only while they number fewer than `allowance`,
   * serialised per (meter, subject) across every process on the store (batched with other calls,
   * `SeenAdmissions`). Answers what it found:
   * `added` (the members before it were `before`), `member` (already stored, nothing added) or
   * `full` (`before` members, the allowance reached, nothing added).
   */
  admitSeen(name: MeterName, subject: string, item: string, allowance: number): Promise<SeenAdmission>;
  /**
   * Adds one to a count meter's stored count only while it is below `allowance`, atomically
   * across every process on the store (batched with other calls, `CountAdmissions`). Answers `added`
   * (the count before it was `before`) or `full` (nothing added; `before` is the allowance, a
   * lower bound of the stored count).
   */
  admitCount(name: MeterName, subject: string, allowance: number): Promise<SeenAdmission>;
  /**
   * Count and seen meters' admissions sent so far, live (/metrics); absent from a store that
   * batches none into statements.
   */
  admissionTallies?(): { readonly count: AdmissionTally; readonly seen: AdmissionTally };
}

/**
 * Rows per statement (both stores run statements off the request thread: a server elsewhere,
 * the embedded store in its own thread). Larger statements cost fewer round trips; this size
 * keeps one statement's parameters to a few hundred KB.
 */
export const STATEMENT_ROWS = 5000;

import type { Logger } from "../logger";
import type { AbsenceFilter } from "./absence-filter";
import type { MeterRows, MeterStore } from "./meter-store";
import { STATEMENT_ROWS } from "./meter-store";
import { FlushBatch, type FlushPart, type MeterTable } from "./meter-table";
import { hashForLog, isDataError, ROW_REFUSED, sqlStateOf, writeSplitting } from "./refused-rows";

/** What the flush protocol works on: the counters' dirty tables and their store. */
export interface FlushSource {
  readonly store: MeterStore;
  readonly dirtyTables: Set<MeterTable>;
  /** Keys known to exist in the store (an exclusive writer's absence filter), or null. */
  readonly present: AbsenceFilter | null;
  /** Entries with unflushed deltas, over every table. */
  readonly pendingCount: number;
  /**
   * Resolves once the ticks waiting for their value's read have landed; null when none wait (the
   * flush then takes its first batch before it yields, so ticks arriving later are the next's).
   */
  waitForTicks(): Promise<void> | null;
}

/** A take's part as the store's rows. */
function rowsOfPart(part: FlushPart): MeterRows {
  const { table } = part;
  return {
    name: table,
    seenKind: table.seenKind,
    keyId: table.keyId,
    subjects: part.subjects,
    deltas: part.deltas,
    items: part.items,
  };
}

/**
 * Writes what was dirty when it began, in transactions of at most STATEMENT_ROWS subjects
 * (ticks that arrive meanwhile wait for the next flush). A transaction that fails with a data
 * error is split until the rows the store refuses are found (`isolate`): those are dropped
 * and logged, the others written. Any other failure (the store unreachable) puts the
 * transaction's deltas back and stops; those written before it stay written. `logger` is the
 * flusher's; without one (a test, a tool) refused rows are reported on standard output.
 */
export async function flushTables(source: FlushSource, logger: Logger): Promise<void> {
  // Ticks waiting for their value's read belong to this flush (those that come later, the next).
  const waiting = source.waitForTicks();
  if (waiting !== null) await waiting;
  let budget = source.pendingCount;
  while (budget > 0 && source.dirtyTables.size > 0) {
    const batch = new FlushBatch();
    const want = Math.min(STATEMENT_ROWS, budget);
    let room = want;
    for (const table of source.dirtyTables) {
      if (room === 0) break;
      room -= table.take(batch, room);
      if (table.dirtyCount === 0) source.dirtyTables.delete(table);
    }
    budget -= want - room;
    if (batch.parts.length === 0) break;
    let keyIds: number[];
    try {
      keyIds = await source.store.write(batch.parts.map(rowsOfPart));
    } catch (error) {
      if (isDataError(error)) {
        // Settles every part; throws (with the unwritten rows kept) on any other failure.
        await isolate(source, batch, logger);
        continue;
      }
      for (const part of batch.parts) part.table.settle(false, source.present);
      throw error;
    }
    for (let i = 0; i < batch.parts.length; i++) {
      const table = (batch.parts[i] as FlushPart).table;
      // Only now: a key row created by a transaction that rolled back does not exist.
      table.keyId = keyIds[i] as number;
      table.settle(true, source.present);
    }
  }
}

/**
 * One batch in one transaction: per table, count deltas added or seen members inserted once,
 * under the table's key id (created on its first flush). Returns the parts' key ids.

/**
 * A batch whose transaction failed with a data error (`isDataError`: Postgres refuses a value,
 * e.g. a NUL character in a subject): a table whose key row is not stored yet first writes its
 * key alone (a meter whose names are refused drops its rows with one line), then the rows are
 * written in halves, split again where a half fails, until each refused row fails alone
 * (`writeSplitting`). A refused row is dropped and logged once, with its meter and a hash of
 * its subject, never the subject itself; every other row is written. Should anything else go
 * wrong meanwhile (the store becomes unreachable), the rows not yet written are kept for the
 * next flush and the error is thrown. Every part is settled either way.
 */
async function isolate(source: FlushSource, batch: FlushBatch, logger: Logger): Promise<void> {
  const parts = batch.parts;
  const outcomes = parts.map((part) => new Uint8Array(part.subjects.length));
  let failure: unknown = null;
  try {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as FlushPart;
      const table = part.table;
      if (table.keyId !== null) continue;
      try {
        table.keyId = await source.store.keyId(table);
      } catch (error) {
        if (!isDataError(error)) throw error;
        (outcomes[i] as Uint8Array).fill(ROW_REFUSED);
        logger.error("meter refused by the store; its unwritten counts are dropped", {
          tenant: table.tenant,
          site: table.site,
          meter: table.meter,
          period: table.period,
          rows: part.subjects.length,
          code: sqlStateOf(error),
        });
      }
    }
    // The rows left, numbered across parts: part `live[j]` holds rows [starts[j], starts[j + 1]).
    const live: number[] = [];
    const starts: number[] = [0];
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as FlushPart;
      if (part.table.keyId === null || part.subjects.length === 0) continue;
      live.push(i);
      starts.push((starts[starts.length - 1] as number) + part.subjects.length);
    }
    const total = starts[starts.length - 1] as number;
    const flat = new Uint8Array(total);
    const rowAt = (row: number): [FlushPart, number] => {
      let j = 0;
      while ((starts[j + 1] as number) <= row) j++;
      return [parts[live[j] as number] as FlushPart, row - (starts[j] as number)];
    };
    try {
      await writeSplitting(
        flat,
        0,
        total,
        async (start, end) => {
          const pieces: FlushPart[] = [];
          for (let j = 0; j < live.length; j++) {
            const from = Math.max(start, starts[j] as number) - (starts[j] as number);
            const to = Math.min(end, starts[j + 1] as number) - (starts[j] as number);
            if (from >= to) continue;
            const part = parts[live[j] as number] as FlushPart;
            const seen = part.table.seenKind;
            pieces.push({
              table: part.table,
              subjects: part.subjects.slice(from, to),
              deltas: seen ? [] : part.deltas.slice(from, to),
              items: seen ? part.items.slice(from, to) : [],
              entries: null,
            });
          }
          await source.store.write(pieces.map(rowsOfPart));
        },
        (row, error) => {
          const [part, r] = rowAt(row);
          const { tenant, site, meter, period, seenKind } = part.table;
          logger.error("meter row refused by the store; dropped", {
            tenant,
            site,
            meter,
            period,
            subjectHash: hashForLog(part.subjects[r] as string),
            ...(seenKind ? { itemHash: hashForLog(part.items[r] as string) } : { delta: part.deltas[r] }),
            code: sqlStateOf(error),
          });
        },
      );
    } finally {
      for (let j = 0; j < live.length; j++) {
        (outcomes[live[j] as number] as Uint8Array).set(flat.subarray(starts[j] as number, starts[j + 1] as number));
      }
    }
  } catch (error) {
    failure = error;
  }
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as FlushPart;
    part.table.settleRows(outcomes[i] as Uint8Array, part.entries, source.present);
  }
  if (failure !== null) throw failure;
}

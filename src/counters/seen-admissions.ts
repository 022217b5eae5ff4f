import { sql } from "drizzle-orm";
import { AdmissionBatcher, keptWaiting, type Waiting } from "./admission-batch";
import type { SeenAdmission } from "./meter-values";

/** One call: `item` for (meter key, subject) under `allowance`. */
interface Call {
  readonly keyId: number;
  readonly subject: string;
  readonly item: string;
  readonly allowance: number;
  readonly waiting: Waiting;
}

/**
 * Calls per statement. Each call's reader is locked until the statement commits (an advisory
 * lock, in Postgres' shared lock table: `max_locks_per_transaction` × connections, 6,400 slots
 * by default for the whole server), and one statement is out at a time per process: at most this
 * many of a process's locks held at once.
 */
export const SEEN_BATCH_CALLS = 100;

/**
 * Seen meters' admissions on a Postgres server, batched as count meters' are (`AdmissionBatcher`):
 * the calls that arrive while a statement is out go together in the next one, one call of
 * `svc_admit_seen_batch` (db/migrations/0021_admit_seen_batch.sql) for all of them instead of a
 * round trip each. For each call in turn, in the order of the readers' locks, it takes the
 * reader's lock, then, in a statement of its own (whose snapshot sees every member committed
 * before the lock was granted), adds the item while the reader's members number fewer than the
 * allowance, as `svc_admit_seen` does for one: two processes admitting to one reader take turns,
 * and a process still calling `svc_admit_seen` (a rolling upgrade) takes the same lock. Calls to
 * one reader keep their order within a batch, and a later one sees an earlier one's member.
 *
 * Why batched: a round trip per new member held a process on a server store near 4,000 requests
 * a second with 200,000 readers (docs/performance.md, "What exactness costs keyed decide").
 */
export class SeenAdmissions extends AdmissionBatcher<Call[]> {
  /** Calls in arrival order; those before `head` are taken (a queue that grew in a stall is taken in steps). */
  private queue: Call[] = [];
  private head = 0;

  /** `item` for (`keyId`, `subject`): `added`, `member` (stored already) or `full` (the allowance reached). */
  admit(keyId: number, subject: string, item: string, allowance: number): Promise<SeenAdmission> {
    return this.queued((waiting) => this.queue.push({ keyId, subject, item, allowance, waiting }));
  }

  protected take(stale: number): Call[] | null {
    while (this.head < this.queue.length) {
      const taken = this.queue.slice(this.head, this.head + SEEN_BATCH_CALLS);
      this.head += taken.length;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        // A queue that never empties (calls coming faster than batches leave) drops what was taken.
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      const batch = taken.filter((call) => keptWaiting(call.waiting, stale));
      if (batch.length > 0) return batch;
    }
    return null;
  }

  /** Runs the batch in one statement; a statement that fails fails every call of it (none was admitted). */
  protected async admitBatch(batch: readonly Call[]): Promise<void> {
    let rows: AdmittedRow[];
    try {
      rows = await this.run<AdmittedRow>(batchStatement(batch));
    } catch (error) {
      for (const call of batch) call.waiting.reject(error);
      return;
    }
    const answered = new Set<number>();
    for (const r of rows) {
      const i = Number(r.ord) - 1;
      const call = batch[i];
      if (call === undefined || answered.has(i)) continue;
      answered.add(i);
      const before = Number(r.before);
      const outcome = r.member ? "member" : Number(r.added) > 0 ? "added" : "full";
      call.waiting.resolve({ outcome, before, keyId: call.keyId });
    }
    if (answered.size === batch.length) return;
    const error = new Error("seen meter admission: the store answered no row for a call");
    batch.forEach((call, i) => {
      if (!answered.has(i)) call.waiting.reject(error);
    });
  }
}

interface AdmittedRow {
  /** The call's place in the batch, from 1. */
  ord: number | string;
  before: number | string;
  member: boolean;
  added: number | string;
}

/** The batch as four arrays, in arrival order (`ord` is each call's place in them). */
function batchStatement(batch: readonly Call[]) {
  const ids: number[] = [];
  const subjects: string[] = [];
  const items: string[] = [];
  const allowances: number[] = [];
  for (const c of batch) {
    ids.push(c.keyId);
    subjects.push(c.subject);
    items.push(c.item);
    allowances.push(c.allowance);
  }
  return sql`select ord, before, member, added from svc_admit_seen_batch(${sql.param(ids)}::int[],
    ${sql.param(subjects)}::text[], ${sql.param(items)}::text[], ${sql.param(allowances)}::int[])`;
}

import { sql } from "drizzle-orm";
import { AdmissionBatcher, giveUpStale, type Waiting } from "./admission-batch";
import type { SeenAdmission } from "./meter-values";

/** The calls of one batch to one stored count: (meter key, subject), with one allowance. */
interface Group {
  readonly keyId: number;
  readonly subject: string;
  readonly allowance: number;
  readonly waiting: Waiting[];
}

/** Groups per statement (as `STATEMENT_ROWS` for the counters' reads and writes). */
const BATCH_GROUPS = 5000;
/** Rounds of update-then-insert before a group is given up (a row deleted between them, each time). */
const ROUNDS = 3;

const groupKey = (keyId: number, subject: string) => `${keyId}\u0000${subject}`;

/**
 * Count meters' admissions on a Postgres server, batched: the calls that arrive while a batch is
 * on its way go together in the next one, a statement for all of them (the calls to one reader's
 * count summed), instead of a statement each. Idle, a call leaves at the end of the current
 * microtask run, alone; under load the batch grows with the load, and a call waits at most for
 * the batch before its own. What the store does is what a statement a call did: a count grows
 * only while it is below the allowance, under the row's lock, so however many processes admit,
 * a reader's calls admitted never pass it.
 *
 * Why batched: one statement per admitted call cost a process on a server store about half of
 * keyed decide's throughput (docs/performance.md, "What exactness costs keyed decide").
 */
export class CountAdmissions extends AdmissionBatcher<Group[]> {
  private queue = new Map<string, Group>();
  /** Calls whose allowance differs from their group's in the queue: the batch after. */
  private later: { keyId: number; subject: string; allowance: number; waiting: Waiting }[] = [];

  /** One call to the count of (`keyId`, `subject`): `added` below `allowance`, else `full`. */
  admit(keyId: number, subject: string, allowance: number): Promise<SeenAdmission> {
    if (allowance <= 0) return Promise.resolve({ outcome: "full", before: allowance, keyId });
    return this.queued((waiting) => this.enqueue(keyId, subject, allowance, waiting));
  }

  private enqueue(keyId: number, subject: string, allowance: number, waiting: Waiting): void {
    const key = groupKey(keyId, subject);
    const group = this.queue.get(key);
    if (group === undefined) this.queue.set(key, { keyId, subject, allowance, waiting: [waiting] });
    else if (group.allowance === allowance) group.waiting.push(waiting);
    // A document changed the allowance meanwhile: one row may sit in a statement only once.
    else this.later.push({ keyId, subject, allowance, waiting });
  }

  protected take(stale: number): Group[] | null {
    const batch: Group[] = [];
    for (const [key, group] of this.queue) {
      if (batch.length === BATCH_GROUPS) break;
      this.queue.delete(key);
      const waiting = giveUpStale(group.waiting, stale);
      if (waiting.length > 0) batch.push(waiting === group.waiting ? group : { ...group, waiting });
    }
    return batch.length > 0 ? batch : null;
  }

  protected override requeue(): boolean {
    const later = this.later;
    this.later = [];
    for (const l of later) this.enqueue(l.keyId, l.subject, l.allowance, l.waiting);
    return later.length > 0;
  }

  /**
   * Counts the batch, answering each group's calls as soon as a statement has counted it (each
   * statement commits on its own). A statement that fails fails only the groups not yet counted:
   * their calls were not admitted, so their requests may fall back; the ones counted stand.
   */
  protected async admitBatch(batch: readonly Group[]): Promise<void> {
    let left = batch;
    const answer = (rows: CountedRow[]) => {
      const counted = new Map<string, CountedRow>();
      for (const r of rows) counted.set(groupKey(Number(r.meter_id), r.subject), r);
      left = left.filter((group) => {
        const r = counted.get(groupKey(group.keyId, group.subject));
        if (r === undefined) return true;
        settle(group, Number(r.before), Number(r.after));
        return false;
      });
    };
    try {
      for (let round = 0; round < ROUNDS && left.length > 0; round++) {
        answer(await this.run<CountedRow>(updateStatement(left)));
        // Never stored: inserted with the calls it admits. A row another process inserted
        // meanwhile makes the insert do nothing for it, and the next round's update counts it.
        if (left.length > 0) answer(await this.run<CountedRow>(insertStatement(left)));
      }
    } catch (error) {
      for (const group of left) for (const w of group.waiting) w.reject(error);
      return;
    }
    const error = new Error(`count meter admissions neither updated nor inserted in ${ROUNDS} rounds`);
    for (const group of left) for (const w of group.waiting) w.reject(error);
  }
}

interface CountedRow {
  meter_id: number | string;
  subject: string;
  before: number | string;
  after: number | string;
}

/** The group's calls in arrival order: the first `after - before` admitted, the rest full. */
function settle(group: Group, before: number, after: number): void {
  const { keyId, allowance, waiting } = group;
  for (let i = 0; i < waiting.length; i++) {
    const w = waiting[i] as Waiting;
    if (i < after - before) w.resolve({ outcome: "added", before: before + i, keyId });
    else w.resolve({ outcome: "full", before: allowance, keyId });
  }
}

/** The groups as four arrays for unnest: meter key, subject, calls, allowance. */
function groupRows(groups: readonly Group[]) {
  const ids: number[] = [];
  const subjects: string[] = [];
  const calls: number[] = [];
  const allowances: number[] = [];
  for (const g of groups) {
    ids.push(g.keyId);
    subjects.push(g.subject);
    calls.push(g.waiting.length);
    allowances.push(g.allowance);
  }
  return sql`unnest(${sql.param(ids)}::int[], ${sql.param(subjects)}::text[], ${sql.param(calls)}::int[],
    ${sql.param(allowances)}::int[]) as r(meter_id, subject, n, allowance)`;
}

/**
 * The stored counts of the groups, each raised by its calls up to its allowance (never lowered:
 * a count written behind past it stays). The rows are locked first, in key order (so two batches
 * over the same rows take turns rather than deadlock), and read as the lock finds them, committed
 * by any other process: `before` is what this statement counted from.
 */
function updateStatement(groups: readonly Group[]) {
  return sql`with r as (select * from ${groupRows(groups)}),
    l as (select m.meter_id, m.subject, m.count from meter_counts m
      join r on m.meter_id = r.meter_id and m.subject = r.subject
      order by m.meter_id, m.subject for update of m),
    u as (update meter_counts c set count = l.count + least(r.n, r.allowance - l.count)
      from l join r on l.meter_id = r.meter_id and l.subject = r.subject
      where c.meter_id = l.meter_id and c.subject = l.subject and l.count < r.allowance)
    select l.meter_id, l.subject, l.count as before,
      case when l.count < r.allowance then l.count + least(r.n, r.allowance - l.count) else l.count end as after
    from l join r on l.meter_id = r.meter_id and l.subject = r.subject`;
}

/** The groups never stored, inserted with the calls they admit; a row that exists meanwhile is left. */
function insertStatement(groups: readonly Group[]) {
  return sql`insert into meter_counts (meter_id, subject, count)
    select r.meter_id, r.subject, least(r.n, r.allowance) from ${groupRows(groups)}
    order by r.meter_id, r.subject
    on conflict (meter_id, subject) do nothing
    returning meter_id, subject, 0 as before, count as after`;
}

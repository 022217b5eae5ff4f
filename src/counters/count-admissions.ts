import { type SQL, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { errorCodeOf } from "../../db/connection-error";
import { DEFAULT_READ_DEADLINE_MS, StoreUnavailable } from "../infra/deadline";
import type { SeenAdmission } from "./meter-values";

/** One call waiting in a batch. */
interface Waiting {
  /** When it was queued (the batcher's clock, ms). */
  readonly at: number;
  readonly resolve: (admission: SeenAdmission) => void;
  readonly reject: (error: unknown) => void;
}

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
/** Tries of a statement Postgres chose as a deadlock's victim (it rolled the statement back whole). */
const DEADLOCK_TRIES = 3;

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
export class CountAdmissions {
  private queue = new Map<string, Group>();
  /** Calls whose allowance differs from their group's in the queue: the batch after. */
  private later: { keyId: number; subject: string; allowance: number; waiting: Waiting }[] = [];
  private sending = false;
  /** When the statement out was sent (the batcher's clock, ms). */
  private sentAt = 0;
  private scheduled = false;
  /** Calls asked (below their allowance) and statements sent: /metrics, the tests. */
  calls = 0;
  statements = 0;

  /**
   * `maxWaitMs`: a call still queued after this long (a statement before it hung) is given up
   * unsent, failed as the store unavailable: its request has stopped waiting (the read deadline)
   * and counted it in this process, and a late admission would count it twice.
   */
  constructor(
    private readonly db: Pick<Db, "execute">,
    private readonly maxWaitMs = DEFAULT_READ_DEADLINE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** One call to the count of (`keyId`, `subject`): `added` below `allowance`, else `full`. */
  admit(keyId: number, subject: string, allowance: number): Promise<SeenAdmission> {
    if (allowance <= 0) return Promise.resolve({ outcome: "full", before: allowance, keyId });
    this.calls++;
    // The statement out has not answered within the deadline (Postgres hangs): fail at once, as
    // a refused connection does, rather than queue behind it.
    if (this.sending && this.now() - this.sentAt > this.maxWaitMs) {
      return Promise.reject(new StoreUnavailable("deadline"));
    }
    return new Promise((resolve, reject) => {
      this.enqueue(keyId, subject, allowance, { at: this.now(), resolve, reject });
      this.schedule();
    });
  }

  private enqueue(keyId: number, subject: string, allowance: number, waiting: Waiting): void {
    const key = groupKey(keyId, subject);
    const group = this.queue.get(key);
    if (group === undefined) this.queue.set(key, { keyId, subject, allowance, waiting: [waiting] });
    else if (group.allowance === allowance) group.waiting.push(waiting);
    // A document changed the allowance meanwhile: one row may sit in a statement only once.
    else this.later.push({ keyId, subject, allowance, waiting });
  }

  private schedule(): void {
    if (this.sending || this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.send();
    });
  }

  private send(): void {
    if (this.sending || this.queue.size === 0) return;
    const batch: Group[] = [];
    const stale = this.now() - this.maxWaitMs;
    for (const [key, group] of this.queue) {
      if (batch.length === BATCH_GROUPS) break;
      this.queue.delete(key);
      const waiting = giveUpStale(group.waiting, stale);
      if (waiting.length > 0) batch.push(waiting === group.waiting ? group : { ...group, waiting });
    }
    if (batch.length === 0) {
      this.next();
      return;
    }
    this.sending = true;
    this.sentAt = this.now();
    void this.count(batch).then(() => this.next());
  }

  private next(): void {
    this.sending = false;
    const later = this.later;
    this.later = [];
    for (const l of later) this.enqueue(l.keyId, l.subject, l.allowance, l.waiting);
    this.schedule();
  }

  /**
   * Counts the batch, answering each group's calls as soon as a statement has counted it (each
   * statement commits on its own). A statement that fails fails only the groups not yet counted:
   * their calls were not admitted, so their requests may fall back; the ones counted stand.
   */
  private async count(batch: readonly Group[]): Promise<void> {
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
        answer(await this.run(updateStatement(left)));
        // Never stored: inserted with the calls it admits. A row another process inserted
        // meanwhile makes the insert do nothing for it, and the next round's update counts it.
        if (left.length > 0) answer(await this.run(insertStatement(left)));
      }
    } catch (error) {
      for (const group of left) for (const w of group.waiting) w.reject(error);
      return;
    }
    const error = new Error(`count meter admissions neither updated nor inserted in ${ROUNDS} rounds`);
    for (const group of left) for (const w of group.waiting) w.reject(error);
  }

  /**
   * One statement; run again when Postgres chose it as a deadlock's victim (it rolled the
   * statement back whole, so running it again counts nothing twice).
   */
  private async run(statement: SQL): Promise<CountedRow[]> {
    for (let attempt = 1; ; attempt++) {
      this.statements++;
      try {
        return rowsOf<CountedRow>(await this.db.execute(statement));
      } catch (error) {
        if (attempt >= DEADLOCK_TRIES || errorCodeOf(error) !== "40P01") throw error;
      }
    }
  }
}

interface CountedRow {
  meter_id: number | string;
  subject: string;
  before: number | string;
  after: number | string;
}

/** The calls queued since `stale` (the batcher's clock); the older ones are failed unsent. */
function giveUpStale(waiting: Waiting[], stale: number): Waiting[] {
  if ((waiting[0] as Waiting).at >= stale) return waiting;
  const kept: Waiting[] = [];
  for (const w of waiting) {
    if (w.at >= stale) kept.push(w);
    else w.reject(new StoreUnavailable("deadline"));
  }
  return kept;
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

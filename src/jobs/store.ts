import { randomUUID } from "node:crypto";
import { and, eq, inArray, lte, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { jobs } from "../../db/schema";

/** A job to owe: at most one row per (kind, key) exists; `runAt` is when it may first run. */
export interface NewJob {
  readonly kind: string;
  readonly key: string;
  readonly payload: unknown;
  readonly runAt: number;
}

/** A job this worker holds under `lease` until `leaseUntil`; `attempts` counts this run. */
export interface ClaimedJob {
  readonly id: number;
  readonly kind: string;
  readonly key: string;
  readonly payload: unknown;
  readonly attempts: number;
  readonly lease: string;
}

/** What an operator sees of one kind: rows owed, held, given up on, and the oldest owed. */
export interface KindStats {
  readonly kind: string;
  readonly queued: number;
  readonly running: number;
  readonly dead: number;
  /** Depth: queued plus running (work still owed). */
  readonly depth: number;
  /** When the oldest row still owed was first enqueued (ISO 8601), or null. */
  readonly oldest: string | null;
}

/** Where jobs live. The drizzle implementation below runs on both stores. */
export interface JobStore {
  /** Owes `rows`; in `tx` when given (a caller's transaction: the rows exist once it commits). */
  enqueue(rows: readonly NewJob[], now: number, tx?: Db): Promise<void>;
  claim(kinds: readonly string[], now: number, limit: number, leaseMs: number): Promise<ClaimedJob[]>;
  /** Ends a run: deletes the row, or queues it again when a notice arrived during the run. */
  complete(job: ClaimedJob): Promise<void>;
  /** A failed run: queued again at `retryAt`, or dead when `retryAt` is null (a notice during the run revives it). */
  fail(job: ClaimedJob, error: string, retryAt: number | null): Promise<void>;
  /** When the earliest row of these kinds falls due (a queued run_at or a running lease's end); +Infinity when none. */
  nextDue(kinds: readonly string[]): Promise<number>;
  /** Per kind; with `keyPrefix`, only the keys that start with it (e.g. one site's). */
  stats(kinds: readonly string[], keyPrefix?: string): Promise<KindStats[]>;
}

const DUE_STATES = ["queued", "running"] as const;

export class DrizzleJobStore implements JobStore {
  constructor(private readonly db: Db) {}

  async enqueue(rows: readonly NewJob[], now: number, tx: Db = this.db): Promise<void> {
    if (rows.length === 0) return;
    // One statement may not touch a row twice (ON CONFLICT): the last notice per key wins.
    const unique = new Map<string, NewJob>();
    for (const row of rows) unique.set(`${row.kind}\u0000${row.key}`, row);
    await tx
      .insert(jobs)
      .values(
        [...unique.values()].map((r) => ({
          kind: r.kind,
          key: r.key,
          payload: r.payload,
          runAt: new Date(r.runAt),
          createdAt: new Date(now),
        })),
      )
      .onConflictDoUpdate({
        target: [jobs.kind, jobs.key],
        // Every expression reads the row as it was before this update.
        set: {
          payload: sql`excluded.payload`,
          // Queued: the first notice's time is kept (a stream of notices cannot push the read
          // away forever; the read, when it runs, sees every change made before it). Running:
          // the rerun goes at the new notice's time. Dead: revived.
          runAt: sql`case when "jobs"."state" = 'queued' then least("jobs"."run_at", excluded.run_at) else excluded.run_at end`,
          dirty: sql`"jobs"."dirty" or "jobs"."state" = 'running'`,
          attempts: sql`case when "jobs"."state" = 'dead' then 0 else "jobs"."attempts" end`,
          createdAt: sql`case when "jobs"."state" = 'dead' then excluded.created_at else "jobs"."created_at" end`,
          state: sql`case when "jobs"."state" = 'dead' then 'queued' else "jobs"."state" end`,
        },
      });
  }

  async claim(kinds: readonly string[], now: number, limit: number, leaseMs: number): Promise<ClaimedJob[]> {
    if (kinds.length === 0) return [];
    const at = new Date(now);
    const lease = randomUUID();
    const rows = await this.db
      .update(jobs)
      .set({
        state: "running",
        attempts: sql`${jobs.attempts} + 1`,
        dirty: false,
        lease,
        leaseUntil: new Date(now + leaseMs),
      })
      .where(
        inArray(
          jobs.id,
          this.db
            .select({ id: jobs.id })
            .from(jobs)
            .where(
              and(
                inArray(jobs.kind, [...kinds]),
                or(
                  and(eq(jobs.state, "queued"), lte(jobs.runAt, at)),
                  and(eq(jobs.state, "running"), lte(jobs.leaseUntil, at)),
                ),
              ),
            )
            .orderBy(jobs.runAt)
            .limit(limit)
            .for("update", { skipLocked: true }),
        ),
      )
      .returning({ id: jobs.id, kind: jobs.kind, key: jobs.key, payload: jobs.payload, attempts: jobs.attempts });
    return rows.map((r) => ({ ...r, lease }));
  }

  async complete(job: ClaimedJob): Promise<void> {
    // Two statements and no transaction: a concurrent enqueue either commits first (the row is
    // dirty, so it is not deleted and is queued again below) or waits for the delete and then
    // inserts a fresh row.
    const deleted = await this.db
      .delete(jobs)
      .where(and(eq(jobs.id, job.id), eq(jobs.lease, job.lease), eq(jobs.dirty, false)))
      .returning({ id: jobs.id });
    if (deleted.length > 0) return;
    await this.db
      .update(jobs)
      .set({ state: "queued", dirty: false, attempts: 0, lease: null, leaseUntil: null, lastError: null })
      .where(and(eq(jobs.id, job.id), eq(jobs.lease, job.lease)));
  }

  async fail(job: ClaimedJob, error: string, retryAt: number | null): Promise<void> {
    const final = retryAt === null;
    const next = new Date(retryAt ?? 0);
    await this.db
      .update(jobs)
      .set({
        state: final ? sql`case when ${jobs.dirty} then 'queued' else 'dead' end` : "queued",
        runAt: sql`case when ${jobs.dirty} then ${jobs.runAt} else ${next.toISOString()}::timestamptz end`,
        attempts: sql`case when ${jobs.dirty} then 0 else ${jobs.attempts} end`,
        dirty: false,
        lease: null,
        leaseUntil: null,
        lastError: error.slice(0, 500),
      })
      .where(and(eq(jobs.id, job.id), eq(jobs.lease, job.lease)));
  }

  async nextDue(kinds: readonly string[]): Promise<number> {
    if (kinds.length === 0) return Number.POSITIVE_INFINITY;
    const [row] = await this.db
      .select({
        at: sql<
          Date | string | null
        >`min(case when ${jobs.state} = 'queued' then ${jobs.runAt} else ${jobs.leaseUntil} end)`,
      })
      .from(jobs)
      .where(and(inArray(jobs.kind, [...kinds]), inArray(jobs.state, [...DUE_STATES])));
    return row?.at == null ? Number.POSITIVE_INFINITY : new Date(row.at).getTime();
  }

  async stats(kinds: readonly string[], keyPrefix?: string): Promise<KindStats[]> {
    const rows =
      kinds.length === 0
        ? []
        : await this.db
            .select({
              kind: jobs.kind,
              state: jobs.state,
              n: sql<number | string>`count(*)`,
              oldest: sql<Date | string | null>`min(${jobs.createdAt})`,
            })
            .from(jobs)
            .where(
              and(
                inArray(jobs.kind, [...kinds]),
                keyPrefix === undefined ? undefined : sql`left(${jobs.key}, ${keyPrefix.length}) = ${keyPrefix}`,
              ),
            )
            .groupBy(jobs.kind, jobs.state);
    return kinds.map((kind) => {
      const of = (state: string) => rows.find((r) => r.kind === kind && r.state === state);
      const queued = Number(of("queued")?.n ?? 0);
      const running = Number(of("running")?.n ?? 0);
      const owed = [of("queued")?.oldest, of("running")?.oldest]
        .filter((x): x is Date | string => x != null)
        .map((x) => new Date(x).getTime());
      return {
        kind,
        queued,
        running,
        dead: Number(of("dead")?.n ?? 0),
        depth: queued + running,
        oldest: owed.length === 0 ? null : new Date(Math.min(...owed)).toISOString(),
      };
    });
  }
}

import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import type { RetentionSettings } from "../config";
import { errorText } from "../infra/error-text";
import type { JobHandler, KindOptions } from "../jobs/queue";
import type { Logger } from "../logger";
import { type MeterRetention, RETENTION_RULES, sweepBatch, sweepMeterPeriods } from "./rules";

export const RETENTION_JOB = "retention.sweep";

/** The part of the job queue the sweeper uses. */
export interface RetentionJobs {
  register(kind: string, handler: JobHandler, options?: Partial<KindOptions>): void;
  enqueue(kind: string, items: readonly { key: string; payload: unknown }[]): Promise<void>;
}

export interface RetentionDeps {
  readonly db: Db;
  readonly jobs: RetentionJobs;
  readonly settings: RetentionSettings;
  readonly now: () => number;
  readonly logger: Logger;
  /**
   * The embedded store: PGlite runs Postgres in single-user mode, where autovacuum never runs, so
   * without our VACUUM the space of swept (and updated) rows is never reused and the planner's row
   * estimates (`pg_class.reltuples`, read by /metrics) stay unknown.
   */
  readonly vacuum: boolean;
  /** A meter's own `retainDays` from its site's live document (absent: `settings.meterDays`). */
  readonly meterRetention?: MeterRetention;
}

/** On the embedded store, every table is vacuumed and analysed at most this often (swept ones each run). */
const VACUUM_ALL_EVERY_MS = 3_600_000;

/** Batches one run deletes at most; a longer backlog is owed again at once (the job's lease stays short). */
const BATCHES_PER_RUN = 200;

/** What one sweep removed, per table. */
export type SweepCounts = Record<string, number>;

/**
 * Removes ended data (src/retention/rules.ts) in small batches, off the request path: a timer owes
 * one `retention.sweep` job (every process owes the same key, so the notices collapse) and the
 * job queue runs it in one process at a time across every process on the store (its claim is
 * FOR UPDATE SKIP LOCKED under a lease). Each batch is its own short statement, and the sweep
 * yields between batches, so decide (served from memory) and the counter flush never wait long.
 */
export class RetentionSweeper {
  private timer: ReturnType<typeof setInterval> | null = null;
  /** The first full vacuum comes an hour after start, not while a starting server loads. */
  private vacuumedAllAt: number;

  constructor(private readonly deps: RetentionDeps) {
    this.vacuumedAllAt = deps.now();
    deps.jobs.register(
      RETENTION_JOB,
      async () => {
        const counts = await this.sweep(deps.now());
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        if (total > 0) deps.logger.info("retention swept", counts);
      },
      { maxAttempts: 3, leaseMs: 10 * 60_000 },
    );
  }

  /** Owes a sweep every `intervalMs` (0: never); the first one interval after start, not while it loads. */
  start(): void {
    const { intervalMs } = this.deps.settings;
    if (intervalMs === 0 || this.timer) return;
    this.timer = setInterval(() => this.owe(), intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private owe(): void {
    this.deps.jobs.enqueue(RETENTION_JOB, [{ key: "all", payload: null }]).catch((error: unknown) => {
      this.deps.logger.warn("owing a retention sweep failed", { error: errorText(error) });
    });
  }

  /** One sweep at `now`: every rule until nothing of it has ended, or the run's batch budget is spent. */
  async sweep(now: number): Promise<SweepCounts> {
    const { db, settings } = this.deps;
    const counts: SweepCounts = {};
    let budget = BATCHES_PER_RUN;
    const add = (table: string, n: number) => {
      if (n > 0) counts[table] = (counts[table] ?? 0) + n;
    };
    for (const rule of RETENTION_RULES) {
      while (budget-- > 0) {
        const n = await sweepBatch(db, rule, settings, now);
        add(rule.table, n);
        await yieldTurn();
        if (n < settings.batch) break;
      }
    }
    while (budget-- > 0) {
      const n = await sweepMeterPeriods(db, settings, now, this.deps.meterRetention);
      if (n === 0) break;
      add("meter_periods", n);
      await yieldTurn();
    }
    if (budget <= 0) this.owe();
    if (this.deps.vacuum) await this.vacuum(now, counts);
    return counts;
  }

  /** VACUUM (ANALYZE) the tables swept now, or every table once an hour; one statement per table. */
  private async vacuum(now: number, counts: SweepCounts): Promise<void> {
    const all = now - this.vacuumedAllAt >= VACUUM_ALL_EVERY_MS;
    const tables = all
      ? rowsOf<{ name: string }>(
          await this.deps.db.execute(
            sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'r' and n.nspname = 'public'`,
          ),
        ).map((r) => r.name)
      : Object.keys(counts).flatMap((t) =>
          t === "meter_periods" ? ["meter_seen", "meter_counts", "meter_keys"] : [t],
        );
    for (const table of tables) {
      await this.deps.db.execute(sql`vacuum (analyze) ${sql.identifier(table)}`);
      await yieldTurn();
    }
    if (all) {
      // Every ANALYZE above replaces its table's rows in the catalog's pg_statistic (and their
      // TOAST): without this, those dead rows are never reclaimed here and the catalog grows
      // with every sweep (about 3 MB over the soak's 14 simulated weeks, bench/soak.ts).
      await this.deps.db.execute(sql`vacuum pg_catalog.pg_statistic`);
      // Single-user Postgres has no checkpointer either: without one, WAL segments only accumulate.
      await this.deps.db.execute(sql`checkpoint`);
      this.vacuumedAllAt = now;
    }
  }
}

/** Lets requests queued behind a batch run before the next one. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

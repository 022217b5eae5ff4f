import type { Db } from "../../db/client";
import { errorText } from "../infra/error-text";
import type { Tracing } from "../infra/tracing";
import type { Logger } from "../logger";
import type { ClaimedJob, JobStore, KindStats } from "./store";

/** How one kind of job runs. */
export interface KindOptions {
  /** Runs, counting the first, before a job goes dead. */
  readonly maxAttempts: number;
  /** Wait after the first failure; doubled per further failure, capped at `maxBackoffMs`. */
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  /** How long a claimed job is held; past it, a crashed worker's job is claimed again. */
  readonly leaseMs: number;
  /** Notices of one key within this window collapse into one run (0: run as soon as due). */
  readonly debounceMs: number;
}

const DEFAULT_KIND_OPTIONS: KindOptions = {
  maxAttempts: 8,
  backoffMs: 2_000,
  maxBackoffMs: 10 * 60_000,
  leaseMs: 60_000,
  debounceMs: 0,
};

/** A job's own run: throws to fail (retried with backoff), returns to finish. */
export type JobHandler = (payload: unknown, job: ClaimedJob) => Promise<void>;

/** A failure that names when to try again (e.g. a service's `Retry-After`), instead of the backoff. */
export class RetryAt extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

const BATCH = 10;

/**
 * A durable job queue over a JobStore (Postgres, both stores): jobs keyed by (kind, key) so
 * notices of one key collapse, claimed under a lease with SKIP LOCKED so no two workers run one
 * job at once, retried with exponential backoff up to a kind's maximum, then dead. Its timer and
 * its runs are background work: nothing on the request path waits for them. Time is the injected
 * clock, so tests drive debounce and backoff by hand and call `runDue()`.
 */
export class JobQueue {
  private readonly kinds = new Map<string, { handler: JobHandler; options: KindOptions }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<number> | null = null;
  /** Embedded store: ticks skip the store until then (nothing of ours is due before it). */
  private quietUntil = 0;
  private enqueued = 0;
  /** A kick arrived while a pass ran (which may have claimed before the kicked rows existed). */
  private rerun = false;

  /**
   * `shared`: other processes use the same store (a Postgres server), so every tick looks for
   * due jobs; otherwise (embedded) an idle queue costs no query.
   */
  constructor(
    private readonly store: JobStore,
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly shared: boolean,
    /** With tracing on, each run is a `job <kind>` span: its statements and outside calls nest in it. */
    private readonly tracing: Pick<Tracing, "inSpan"> | null = null,
  ) {}

  register(kind: string, handler: JobHandler, options: Partial<KindOptions> = {}): void {
    this.kinds.set(kind, { handler, options: { ...DEFAULT_KIND_OPTIONS, ...options } });
  }

  optionsOf(kind: string): KindOptions {
    const entry = this.kinds.get(kind);
    if (!entry) throw new Error(`no job kind "${kind}" is registered`);
    return entry.options;
  }

  /** Owes one run per key, due after the kind's debounce; notices of a key already owed collapse. */
  async enqueue(kind: string, items: readonly { key: string; payload: unknown }[]): Promise<void> {
    if (items.length === 0) return;
    const runAt = await this.owe(kind, items);
    this.enqueued++;
    this.quietUntil = Math.min(this.quietUntil, runAt);
  }

  /**
   * Owes one run per key inside the caller's transaction (work a request hands off, written with
   * what it paid for); call `kick()` once that transaction has committed.
   */
  async enqueueIn(tx: Db, kind: string, items: readonly { key: string; payload: unknown }[]): Promise<void> {
    if (items.length === 0) return;
    await this.owe(kind, items, tx);
  }

  /** Writes one run per key, due after the kind's debounce (in `tx` when given); returns when they are due. */
  private async owe(kind: string, items: readonly { key: string; payload: unknown }[], tx?: Db): Promise<number> {
    const now = this.now();
    const runAt = now + this.optionsOf(kind).debounceMs;
    await this.store.enqueue(
      items.map((i) => ({ kind, key: i.key, payload: i.payload, runAt })),
      now,
      tx,
    );
    return runAt;
  }

  /**
   * Jobs were written and committed: a pass starts soon, off the caller's path (after the current
   * turn's I/O, so a request's answer goes out first), or again after the pass now running.
   */
  kick(): void {
    this.enqueued++;
    this.quietUntil = 0;
    if (this.running) this.rerun = true;
    else setImmediate(() => void this.runDue());
  }

  start(intervalMs = 1000): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.now() >= this.quietUntil) void this.runDue();
    }, intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.running) await this.running;
  }

  /** Per registered kind: queued, running, dead, depth and the oldest owed. */
  stats(): Promise<KindStats[]> {
    return this.store.stats([...this.kinds.keys()].sort());
  }

  /** One kind's stats over the keys that start with `keyPrefix`. */
  async statsOf(kind: string, keyPrefix?: string): Promise<KindStats> {
    const [stats] = await this.store.stats([kind], keyPrefix);
    return stats!;
  }

  /** Runs every job due now; returns how many finished. Overlapping calls share one pass. */
  runDue(): Promise<number> {
    if (this.running) return this.running;
    this.running = this.pass().finally(() => {
      this.running = null;
      if (this.rerun) {
        this.rerun = false;
        void this.runDue();
      }
    });
    return this.running;
  }

  private async pass(): Promise<number> {
    const generation = this.enqueued;
    const kinds = [...this.kinds.keys()];
    let done = 0;
    for (;;) {
      let claimed: ClaimedJob[];
      try {
        // The longest lease of the registered kinds covers every job of the batch.
        const leaseMs = Math.max(...[...this.kinds.values()].map((k) => k.options.leaseMs));
        claimed = await this.store.claim(kinds, this.now(), BATCH, leaseMs);
      } catch (error) {
        this.logger.warn("job claim failed", { error: errorText(error) });
        return done;
      }
      const results = await Promise.all(claimed.map((job) => this.runOne(job)));
      done += results.filter(Boolean).length;
      if (claimed.length < BATCH) break;
    }
    if (this.shared) return done;
    try {
      const next = await this.store.nextDue(kinds);
      if (generation === this.enqueued) this.quietUntil = next;
    } catch {
      this.quietUntil = 0;
    }
    return done;
  }

  private async runOne(job: ClaimedJob): Promise<boolean> {
    const entry = this.kinds.get(job.kind);
    if (!entry) return false;
    const { options } = entry;
    try {
      // A job whose every run so far crashed its worker (lease expired) is not run again.
      if (job.attempts > options.maxAttempts) throw new Error("attempts exhausted (lease expired)");
      if (this.tracing === null) await entry.handler(job.payload, job);
      else {
        const attributes = { "svc.job.kind": job.kind, "svc.job.attempt": job.attempts };
        await this.tracing.inSpan(`job ${job.kind}`, attributes, () => entry.handler(job.payload, job));
      }
      await this.store.complete(job);
      return true;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const final = job.attempts >= options.maxAttempts;
      const delay =
        error instanceof RetryAt
          ? Math.max(error.delayMs, options.backoffMs)
          : Math.min(options.maxBackoffMs, options.backoffMs * 2 ** (job.attempts - 1));
      const retryAt = final ? null : this.now() + delay;
      this.logger.warn("job failed", { kind: job.kind, attempt: job.attempts, final, error: message.slice(0, 300) });
      try {
        await this.store.fail(job, message, retryAt);
        if (retryAt !== null) this.quietUntil = Math.min(this.quietUntil, retryAt);
      } catch (storeError) {
        // The lease expires and the job is claimed again.
        this.logger.warn("job failure not recorded", { kind: job.kind, error: String(storeError) });
      }
      return false;
    }
  }
}

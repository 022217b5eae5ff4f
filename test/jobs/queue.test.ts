import { beforeEach, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { MemoryJobStore } from "../../src/jobs/memory-store";
import { JobQueue, RetryAt } from "../../src/jobs/queue";
import { DrizzleJobStore, type JobStore } from "../../src/jobs/store";
import { manualClock, memoryLogger } from "../helpers/clock";
import { storeContract } from "../helpers/store-contract";

type Run = { key: string; payload: unknown };

/** A queue over `store` with one kind, "work", whose runs are recorded (and fail while `failing`). */
function workQueue(store: JobStore, clock: ReturnType<typeof manualClock>, runs: Run[], control = { failing: 0 }) {
  const queue = new JobQueue(store, memoryLogger(), clock.now, false);
  queue.register(
    "work",
    async (payload, job) => {
      runs.push({ key: job.key, payload });
      if (control.failing > 0) {
        control.failing--;
        throw new Error("service down");
      }
    },
    { debounceMs: 5_000, backoffMs: 1_000, maxBackoffMs: 60_000, maxAttempts: 3, leaseMs: 30_000 },
  );
  return queue;
}

interface Jobs {
  /** An empty job store: the twin, or the drizzle store over a cleared table. */
  fresh(): Promise<JobStore>;
  /** The last error recorded on each row. */
  lastErrors(): Promise<(string | null)[]>;
}

// The queue's logic over the in-memory twin (the fast tier) and over both Postgres stores.
storeContract<Jobs>(
  "durable job queue",
  (_kind, db) => {
    if (db === null) {
      let store = new MemoryJobStore();
      return {
        fresh: async () => {
          store = new MemoryJobStore();
          return store;
        },
        lastErrors: async () => store.lastErrors(),
      };
    }
    return {
      async fresh() {
        await db.execute(sql`delete from jobs`);
        return new DrizzleJobStore(db);
      },
      async lastErrors() {
        return rowsOf<{ last_error: string | null }>(await db.execute(sql`select last_error from jobs`)).map(
          (r) => r.last_error,
        );
      },
    };
  },
  (jobs) => {
    let store: JobStore;
    beforeEach(async () => {
      store = await jobs().fresh();
    });

    it("collapses notices of one key within the debounce window into one run with the latest payload", async () => {
      const clock = manualClock();
      const runs: Run[] = [];
      const queue = workQueue(store, clock, runs);
      await queue.enqueue("work", [{ key: "a", payload: 1 }]);
      clock.advance(3_000);
      await queue.enqueue("work", [
        { key: "a", payload: 2 },
        { key: "a", payload: 3 },
      ]);
      expect(await queue.runDue()).toBe(0);
      // The first notice's due time is kept: the run goes 5 s after it, not 5 s after the last.
      clock.advance(2_000);
      expect(await queue.runDue()).toBe(1);
      expect(runs).toEqual([{ key: "a", payload: 3 }]);
      expect(await queue.runDue()).toBe(0);
      expect((await queue.stats())[0]).toMatchObject({ kind: "work", depth: 0, dead: 0 });
    });

    it("runs different keys separately", async () => {
      const clock = manualClock();
      const runs: Run[] = [];
      const queue = workQueue(store, clock, runs);
      await queue.enqueue("work", [
        { key: "a", payload: 1 },
        { key: "b", payload: 2 },
      ]);
      clock.advance(5_000);
      expect(await queue.runDue()).toBe(2);
      expect(runs.map((r) => r.key).sort()).toEqual(["a", "b"]);
    });

    it("runs a key again when a notice arrives while it runs", async () => {
      const clock = manualClock();
      const runs: Run[] = [];
      const queue = new JobQueue(store, memoryLogger(), clock.now, false);
      let release: () => void = () => {};
      let first = true;
      queue.register(
        "work",
        async (payload, job) => {
          runs.push({ key: job.key, payload });
          if (first) {
            first = false;
            await queue.enqueue("work", [{ key: job.key, payload: "during" }]);
            await new Promise<void>((r) => {
              release = r;
              r();
            });
          }
        },
        { debounceMs: 5_000 },
      );
      await queue.enqueue("work", [{ key: "a", payload: "before" }]);
      clock.advance(5_000);
      expect(await queue.runDue()).toBe(1);
      release();
      expect(await queue.runDue()).toBe(0);
      clock.advance(5_000);
      expect(await queue.runDue()).toBe(1);
      expect(runs.map((r) => r.payload)).toEqual(["before", "during"]);
    });

    it("retries a failed run with exponential backoff, then holds it dead until a fresh notice", async () => {
      const clock = manualClock();
      const runs: Run[] = [];
      const control = { failing: 10 };
      const queue = workQueue(store, clock, runs, control);
      await queue.enqueue("work", [{ key: "a", payload: 1 }]);
      clock.advance(5_000);
      await queue.runDue(); // attempt 1 fails: retry after 1 s
      clock.advance(999);
      await queue.runDue();
      expect(runs.length).toBe(1);
      clock.advance(1);
      await queue.runDue(); // attempt 2 fails: retry after 2 s
      expect(runs.length).toBe(2);
      clock.advance(1_999);
      await queue.runDue();
      expect(runs.length).toBe(2);
      clock.advance(1);
      await queue.runDue(); // attempt 3 fails: the last
      expect(runs.length).toBe(3);
      clock.advance(3_600_000);
      await queue.runDue();
      expect(runs.length).toBe(3);
      expect((await queue.stats())[0]).toMatchObject({ queued: 0, running: 0, dead: 1, depth: 0 });
      expect(await jobs().lastErrors()).toEqual(["service down"]);

      control.failing = 0;
      await queue.enqueue("work", [{ key: "a", payload: 2 }]);
      clock.advance(5_000);
      expect(await queue.runDue()).toBe(1);
      expect((await queue.stats())[0]).toMatchObject({ dead: 0, depth: 0 });
    });

    it("waits as long as a RetryAt failure asks", async () => {
      const clock = manualClock();
      const runs: number[] = [];
      const queue = new JobQueue(store, memoryLogger(), clock.now, false);
      queue.register(
        "work",
        async () => {
          runs.push(clock.now());
          if (runs.length === 1) throw new RetryAt("rate limited", 30_000);
        },
        { backoffMs: 1_000 },
      );
      await queue.enqueue("work", [{ key: "a", payload: null }]);
      await queue.runDue();
      clock.advance(29_999);
      await queue.runDue();
      expect(runs.length).toBe(1);
      clock.advance(1);
      await queue.runDue();
      expect(runs.length).toBe(2);
    });

    it("never runs one job in two workers at once, and claims a crashed worker's job once its lease expires", async () => {
      const clock = manualClock();
      await store.enqueue([{ kind: "work", key: "a", payload: 1, runAt: clock.now() }], clock.now());
      const crashed = await store.claim(["work"], clock.now(), 10, 30_000);
      expect(crashed.length).toBe(1);
      // Another worker finds nothing while the lease holds.
      const runs: Run[] = [];
      const other = workQueue(store, clock, runs);
      expect(await other.runDue()).toBe(0);
      clock.advance(30_000);
      expect(await other.runDue()).toBe(1);
      expect(runs).toEqual([{ key: "a", payload: 1 }]);
      // The crashed worker's late report touches nothing (its lease is gone).
      await store.enqueue([{ kind: "work", key: "a", payload: 2, runAt: clock.now() }], clock.now());
      await store.complete(crashed[0]!);
      expect((await other.stats())[0]).toMatchObject({ queued: 1 });
    });

    it("hands each of many jobs to exactly one of several concurrent workers", async () => {
      const clock = manualClock();
      const runs: Run[] = [];
      const workers = [workQueue(store, clock, runs), workQueue(store, clock, runs), workQueue(store, clock, runs)];
      await workers[0]!.enqueue(
        "work",
        Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, payload: i })),
      );
      clock.advance(5_000);
      const done = await Promise.all(workers.map((w) => w.runDue()));
      expect(done.reduce((a, b) => a + b, 0)).toBe(60);
      expect(new Set(runs.map((r) => r.key)).size).toBe(60);
      expect(runs.length).toBe(60);
    });

    it("reports depth and the oldest owed job", async () => {
      const clock = manualClock();
      const queue = workQueue(store, clock, []);
      const first = clock.now();
      await queue.enqueue("work", [{ key: "a", payload: 1 }]);
      clock.advance(1_000);
      await queue.enqueue("work", [{ key: "b", payload: 1 }]);
      expect(await queue.stats()).toEqual([
        { kind: "work", queued: 2, running: 0, dead: 0, depth: 2, oldest: new Date(first).toISOString() },
      ]);
    });
  },
);

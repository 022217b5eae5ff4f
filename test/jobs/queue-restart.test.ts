import { describe, expect, it } from "bun:test";
import { openDatabase } from "../../db/client";
import { JobQueue } from "../../src/jobs/queue";
import { DrizzleJobStore, type JobStore } from "../../src/jobs/store";
import { manualClock, memoryLogger } from "../helpers/clock";
import { scratchDir } from "../helpers/scratch-dirs";

type Run = { key: string; payload: unknown };

/** A queue over `store` with one kind, "work", whose runs are recorded. */
function workQueue(store: JobStore, clock: ReturnType<typeof manualClock>, runs: Run[]) {
  const queue = new JobQueue(store, memoryLogger(), clock.now, false);
  queue.register(
    "work",
    async (payload, job) => {
      runs.push({ key: job.key, payload });
    },
    { debounceMs: 5_000, backoffMs: 1_000, maxBackoffMs: 60_000, maxAttempts: 3, leaseMs: 30_000 },
  );
  return queue;
}

describe("durable job queue across a restart (embedded store on disk)", () => {
  it("runs after a restart what was owed before it, including a job whose worker died mid-run", async () => {
    const dataDir = scratchDir("svc-jobs-");
    const clock = manualClock();
    let database = await openDatabase({ dataDir });
    const store = new DrizzleJobStore(database.db);
    await store.enqueue(
      [
        { kind: "work", key: "owed", payload: "o", runAt: clock.now() },
        { kind: "work", key: "mid-run", payload: "m", runAt: clock.now() - 1 },
      ],
      clock.now(),
    );
    const held = await store.claim(["work"], clock.now(), 1, 30_000);
    expect(held.map((j) => j.key)).toEqual(["mid-run"]);
    await database.close();

    database = await openDatabase({ dataDir });
    try {
      const runs: Run[] = [];
      const queue = workQueue(new DrizzleJobStore(database.db), clock, runs);
      expect(await queue.runDue()).toBe(1);
      expect(runs.map((r) => r.key)).toEqual(["owed"]);
      clock.advance(30_000);
      expect(await queue.runDue()).toBe(1);
      expect(runs.map((r) => r.key)).toEqual(["owed", "mid-run"]);
    } finally {
      await database.close();
    }
  }, 60_000);
});

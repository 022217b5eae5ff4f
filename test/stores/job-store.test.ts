import { expect, it } from "bun:test";
import { MemoryJobStore } from "../../src/jobs/memory-store";
import { DrizzleJobStore, type JobStore } from "../../src/jobs/store";
import { storeContract } from "../helpers/store-contract";

const T = Date.UTC(2026, 10, 26, 12);

storeContract<JobStore>(
  "the job store",
  (_kind, db) => (db === null ? new MemoryJobStore() : new DrizzleJobStore(db)),
  (store) => {
    it("keeps one row per kind and key: a queued row keeps its first time, the last payload wins", async () => {
      await store().enqueue([{ kind: "a", key: "k1", payload: { n: 1 }, runAt: T + 5000 }], T);
      await store().enqueue(
        [
          { kind: "a", key: "k1", payload: { n: 2 }, runAt: T + 9000 },
          { kind: "a", key: "k1", payload: { n: 3 }, runAt: T + 8000 },
        ],
        T + 1000,
      );
      expect(await store().nextDue(["a"])).toBe(T + 5000);
      expect(await store().claim(["a"], T + 4999, 10, 1000)).toEqual([]);
      const [job, ...more] = await store().claim(["a"], T + 5000, 10, 1000);
      expect(more).toEqual([]);
      expect(job).toMatchObject({ kind: "a", key: "k1", payload: { n: 3 }, attempts: 1 });
      if (!job) throw new Error("no job");
      await store().complete(job);
      expect(await store().nextDue(["a"])).toBe(Number.POSITIVE_INFINITY);
      expect(await store().stats(["a"])).toEqual([
        { kind: "a", queued: 0, running: 0, dead: 0, depth: 0, oldest: null },
      ]);
    });

    it("claims due rows by due time, at most the limit, each under one lease", async () => {
      await store().enqueue(
        [
          { kind: "b", key: "late", payload: null, runAt: T + 300 },
          { kind: "b", key: "early", payload: null, runAt: T + 100 },
          { kind: "b", key: "mid", payload: null, runAt: T + 200 },
          { kind: "other", key: "x", payload: null, runAt: T },
        ],
        T,
      );
      const first = await store().claim(["b"], T + 1000, 2, 10_000);
      // The earliest two, in no promised order.
      expect(first.map((j) => j.key).sort()).toEqual(["early", "mid"]);
      expect(first[0]?.lease).toBe(first[1]?.lease as string);
      const second = await store().claim(["b"], T + 1000, 5, 10_000);
      expect(second.map((j) => j.key)).toEqual(["late"]);
      expect(second[0]?.lease).not.toBe(first[0]?.lease as string);
      expect(await store().claim([], T + 1000, 5, 10_000)).toEqual([]);
      expect(await store().nextDue(["b"])).toBe(T + 11_000);
      expect(await store().nextDue([])).toBe(Number.POSITIVE_INFINITY);
      for (const job of [...first, ...second]) await store().complete(job);
      expect(await store().nextDue(["b", "other"])).toBe(T);
    });

    it("claims a running row again once its lease ends; the old lease then changes nothing", async () => {
      await store().enqueue([{ kind: "c", key: "k", payload: 1, runAt: T }], T);
      const [held] = await store().claim(["c"], T, 1, 1000);
      expect(await store().claim(["c"], T + 999, 1, 1000)).toEqual([]);
      const [taken] = await store().claim(["c"], T + 1000, 1, 1000);
      expect(taken).toMatchObject({ key: "k", attempts: 2 });
      if (!held || !taken) throw new Error("no job");
      await store().complete(held);
      await store().fail(held, "late", null);
      expect((await store().stats(["c"]))[0]).toMatchObject({ running: 1, dead: 0 });
      await store().complete(taken);
      expect((await store().stats(["c"]))[0]).toMatchObject({ queued: 0, running: 0, depth: 0 });
    });

    it("queues a row again when a notice arrived during its run, with the notice's time and payload", async () => {
      await store().enqueue([{ kind: "d", key: "k", payload: 1, runAt: T }], T);
      const [job] = await store().claim(["d"], T, 1, 60_000);
      await store().enqueue([{ kind: "d", key: "k", payload: 2, runAt: T + 500 }], T + 10);
      if (!job) throw new Error("no job");
      await store().complete(job);
      expect(await store().nextDue(["d"])).toBe(T + 500);
      const [again] = await store().claim(["d"], T + 500, 1, 60_000);
      expect(again).toMatchObject({ payload: 2, attempts: 1 });
    });

    it("retries a failed run at its time, holds it dead after the last, and revives it on a notice", async () => {
      await store().enqueue([{ kind: "e", key: "k", payload: "p", runAt: T }], T);
      const [first] = await store().claim(["e"], T, 1, 60_000);
      if (!first) throw new Error("no job");
      await store().fail(first, "boom", T + 2000);
      expect(await store().nextDue(["e"])).toBe(T + 2000);
      const [second] = await store().claim(["e"], T + 2000, 1, 60_000);
      expect(second?.attempts).toBe(2);
      if (!second) throw new Error("no job");
      await store().fail(second, "x".repeat(600), null);
      expect(await store().nextDue(["e"])).toBe(Number.POSITIVE_INFINITY);
      expect(await store().claim(["e"], T + 99_000, 1, 60_000)).toEqual([]);
      expect(await store().stats(["e"])).toEqual([
        { kind: "e", queued: 0, running: 0, dead: 1, depth: 0, oldest: null },
      ]);
      await store().enqueue([{ kind: "e", key: "k", payload: "q", runAt: T + 50_000 }], T + 40_000);
      expect((await store().stats(["e"]))[0]).toMatchObject({
        queued: 1,
        dead: 0,
        oldest: new Date(T + 40_000).toISOString(),
      });
      const [revived] = await store().claim(["e"], T + 50_000, 1, 60_000);
      expect(revived).toMatchObject({ payload: "q", attempts: 1 });
    });

    it("a failure after a notice during the run queues the row at the notice's time instead", async () => {
      await store().enqueue([{ kind: "f", key: "k", payload: 1, runAt: T }], T);
      const [job] = await store().claim(["f"], T, 1, 60_000);
      await store().enqueue([{ kind: "f", key: "k", payload: 2, runAt: T + 300 }], T + 1);
      if (!job) throw new Error("no job");
      await store().fail(job, "boom", null);
      expect(await store().nextDue(["f"])).toBe(T + 300);
      const [again] = await store().claim(["f"], T + 300, 1, 60_000);
      expect(again).toMatchObject({ payload: 2, attempts: 1 });
    });

    it("reports per kind, optionally for keys with a prefix, the oldest owed row first enqueued", async () => {
      await store().enqueue(
        [
          { kind: "g", key: "site1/a", payload: null, runAt: T },
          { kind: "g", key: "site2/b", payload: null, runAt: T },
        ],
        T + 7,
      );
      await store().enqueue([{ kind: "g", key: "site1/c", payload: null, runAt: T }], T + 9);
      await store().claim(["g"], T, 1, 60_000);
      const all = await store().stats(["g", "none"]);
      expect(all).toEqual([
        { kind: "g", queued: 2, running: 1, dead: 0, depth: 3, oldest: new Date(T + 7).toISOString() },
        { kind: "none", queued: 0, running: 0, dead: 0, depth: 0, oldest: null },
      ]);
      const site1 = await store().stats(["g"], "site1/");
      expect(site1[0]).toMatchObject({ depth: 2 });
      expect(await store().stats([])).toEqual([]);
    });
  },
);

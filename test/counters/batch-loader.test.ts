import { describe, expect, it } from "bun:test";
import { BatchLoader } from "../../src/counters/batch-loader";

describe("BatchLoader", () => {
  it("reads one tick's keys together, each once, and queues keys behind the batches in flight", async () => {
    const batches: string[][] = [];
    const gates: (() => void)[] = [];
    // started(n) settles when the n-th batch's read begins: the test waits on that, not on time.
    const starts: PromiseWithResolvers<void>[] = [];
    const started = (n: number) => {
      starts[n] ??= Promise.withResolvers<void>();
      return starts[n].promise;
    };
    const loader = new BatchLoader<number>(
      async (keys) => {
        batches.push([...keys]);
        started(batches.length - 1);
        starts[batches.length - 1]?.resolve();
        await new Promise<void>((release) => gates.push(release));
        return new Map(keys.filter((k) => k !== "missing").map((k) => [k, k.length]));
      },
      () => 0,
      1,
    );
    const first = [loader.load("a"), loader.load("bb"), loader.load("a")];
    await started(0);
    expect(batches).toEqual([["a", "bb"]]);
    // While the first batch runs, later keys wait and then go in one batch.
    // Batches are scheduled as microtasks: once a macrotask turn has passed, none started.
    const turn = () => new Promise<void>((passed) => setImmediate(passed));
    const later = [loader.load("ccc"), loader.load("missing")];
    await turn();
    const more = loader.load("dddd");
    await turn();
    expect(batches.length).toBe(1);
    gates.shift()?.();
    expect(await Promise.all(first)).toEqual([1, 2, 1]);
    await started(1);
    expect(batches[1]).toEqual(["ccc", "missing", "dddd"]);
    gates.shift()?.();
    expect(await Promise.all([...later, more])).toEqual([3, 0, 4]);
  });

  it("rejects a failed batch's callers and reads their keys again next time", async () => {
    let fail = true;
    const loader = new BatchLoader<number>(
      async (keys) => {
        if (fail) throw new Error("down");
        return new Map(keys.map((k) => [k, 1]));
      },
      () => 0,
    );
    await expect(loader.load("k")).rejects.toThrow("down");
    fail = false;
    expect(await loader.load("k")).toBe(1);
  });
});

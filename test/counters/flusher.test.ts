import { describe, expect, it } from "bun:test";
import type { Db } from "../../db/client";
import { createCounterDeps } from "../../src/counters/deps";
import { type Flushable, Flusher } from "../../src/counters/flusher";
import { MemoryMeterStore } from "../../src/counters/memory-meter-store";
import { createLogger } from "../../src/logger";

/** A part that records each flush's tick and fails while `failing` is set. */
function part(name: string, log: string[]) {
  const p = {
    name,
    failing: false,
    async flush() {
      log.push(name);
      if (p.failing) throw new Error(`${name} down`);
    },
  };
  return p;
}

const quiet = createLogger("silent");

function flusher(everyTicks: number) {
  const log: string[] = [];
  const usage = part("usage", log);
  const meters = part("meters", log);
  const counts = part("counts", log);
  const parts: Flushable[] = [usage, meters, counts];
  const f = new Flusher(parts, 250, quiet, { parts: new Set([usage, counts]), everyTicks });
  return { f, log, usage, meters, counts };
}

describe("Flusher's cadence", () => {
  it("flushes the meters every tick and the statistics every everyTicks-th, in the parts' order", async () => {
    const { f, log } = flusher(4);
    for (let i = 0; i < 8; i++) {
      await f.tick();
      log.push("|");
    }
    expect(log.join(" ")).toBe(
      "meters | meters | meters | usage meters counts | meters | meters | meters | usage meters counts |",
    );
  });

  it("flushes every part on every tick when everyTicks is 1, and on flushAll whatever the tick", async () => {
    const { f, log } = flusher(1);
    await f.tick();
    expect(log).toEqual(["usage", "meters", "counts"]);
    const slow = flusher(4);
    await slow.f.flushAll();
    expect(slow.log).toEqual(["usage", "meters", "counts"]);
  });

  it("does nothing on a tick while a flush runs", async () => {
    const { f, log } = flusher(1);
    const first = f.flushAll();
    expect(f.tick()).toBeUndefined();
    await first;
    expect(log).toEqual(["usage", "meters", "counts"]);
  });

  it("counts as fully flushed only once a failed statistics part has succeeded again", async () => {
    const { f, counts } = flusher(2);
    f.lastSuccessAt = -1;
    counts.failing = true;
    await f.tick(); // meters only
    const afterMeters = f.lastSuccessAt;
    expect(afterMeters).toBeGreaterThan(-1);
    await f.tick(); // every part: counts fails
    expect(f.failures).toBe(1);
    expect(f.lastSuccessAt).toBe(afterMeters);
    await f.tick(); // meters only succeed, counts still failing since its last try
    expect(f.lastSuccessAt).toBe(afterMeters);
    counts.failing = false;
    await f.tick(); // counts succeeds again
    expect(f.lastSuccessAt).toBeGreaterThan(afterMeters);
  });
});

describe("the counters' flusher as createCounterDeps builds it", () => {
  /** The flusher of the counters' deps with these intervals, a key usage part that logs. */
  function built(flushIntervalMs: number, statsFlushIntervalMs: number) {
    const log: string[] = [];
    const deps = createCounterDeps({
      db: null as unknown as Db, // unused: the meters get the memory store
      kind: "embedded",
      config: { meterEntries: 1000, flushIntervalMs, statsFlushIntervalMs, readDeadlineMs: 1000 },
      now: Date.now,
      logger: quiet,
      meterStore: new MemoryMeterStore(),
      keyUsage: part("usage", log),
      decisionSink: { addDecisionCounts: async () => {} },
    });
    return { flusher: deps.flusher, log };
  }

  it("writes key usage every statistics interval, rounded to whole flush intervals (1 s of 250 ms: every 4th)", async () => {
    const { flusher, log } = built(250, 1000);
    for (let i = 0; i < 8; i++) await flusher.tick();
    expect(log).toEqual(["usage", "usage"]);
    const rounded = built(300, 1000); // 3.33 intervals: every 3rd
    for (let i = 0; i < 6; i++) await rounded.flusher.tick();
    expect(rounded.log).toEqual(["usage", "usage"]);
  });

  it("writes key usage on every tick when the statistics interval is shorter than the flush interval", async () => {
    const { flusher, log } = built(250, 100);
    for (let i = 0; i < 3; i++) await flusher.tick();
    expect(log).toEqual(["usage", "usage", "usage"]);
  });
});

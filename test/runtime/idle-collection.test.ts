import { describe, expect, it } from "bun:test";
import { collectWhenIdle } from "../../src/runtime/idle-collection";

/** A server's answer count and clock, moved by the test, and the collections it got. */
function world(minRequests = 100) {
  const state = { answered: 0, now: 0, collected: 0 };
  const idle = collectWhenIdle(() => state.answered, {
    quietMs: 1_000,
    minRequests,
    now: () => state.now,
    collect: () => state.collected++,
    timer: false,
  });
  /** `ms` of time, looked at every 500 ms, with `perTick` answers between two looks. */
  const run = (ms: number, perTick: number) => {
    for (let t = 0; t < ms; t += 500) {
      state.answered += perTick;
      state.now += 500;
      idle.check();
    }
  };
  return { state, idle, run };
}

describe("collection when a busy server goes quiet", () => {
  it("never collects while answers keep coming", () => {
    const { state, run } = world();
    run(60_000, 50);
    expect(state.answered).toBe(6_000);
    expect(state.collected).toBe(0);
  });

  it("collects once after a burst, when no answer came for the quiet time", () => {
    const { state, run } = world();
    run(5_000, 50);
    run(500, 0);
    expect(state.collected).toBe(0);
    run(500, 0);
    expect(state.collected).toBe(1);
    run(30_000, 0);
    expect(state.collected).toBe(1);
  });

  it("does not collect after a trickle smaller than its threshold, however long the quiet", () => {
    const { state, run } = world(100);
    for (let i = 0; i < 9; i++) {
      run(500, 10);
      run(5_000, 0);
    }
    expect(state.answered).toBe(90);
    expect(state.collected).toBe(0);
    // The tenth trickle reaches the threshold since the last collection (none yet): one collection.
    run(500, 10);
    run(5_000, 0);
    expect(state.collected).toBe(1);
  });

  it("collects again after the next burst", () => {
    const { state, run } = world();
    run(2_000, 50);
    run(2_000, 0);
    run(2_000, 50);
    run(2_000, 0);
    expect(state.collected).toBe(2);
  });
});

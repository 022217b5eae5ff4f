import { describe, expect, it } from "bun:test";
import { MemoryMeterStore } from "../../src/counters/memory-meter-store";
import { MeterCounters } from "../../src/counters/meter-counters";

/** Two processes' counters over one store, admitting seen members through it. */
function pair() {
  const store = new MemoryMeterStore();
  return {
    store,
    one: new MeterCounters(store, { exactSeen: true }),
    two: new MeterCounters(store, { exactSeen: true }),
  };
}

describe("seen members admitted by the store", () => {
  it("admits under the allowance only, and says when the member was already there", async () => {
    const { one, two } = pair();
    const a = one.table("t", "s", "articles", "2026-11", true);
    const b = two.table("t", "s", "articles", "2026-11", true);
    expect(a.exactSeen).toBe(true);
    expect(await a.admit("reader", "x", 2)).toEqual({ outcome: "added", before: 0 });
    expect(await b.admit("reader", "y", 2)).toEqual({ outcome: "added", before: 1 });
    expect(await b.admit("reader", "x", 2)).toEqual({ outcome: "member", before: 2 });
    expect(await a.admit("reader", "z", 2)).toEqual({ outcome: "full", before: 2 });
  });

  it("holds an admitted member as written (the flush writes nothing), and a refresh reads the others' members", async () => {
    const { store, one, two } = pair();
    const a = one.table("t", "s", "articles", "2026-11", true);
    await a.load("reader");
    await a.admit("reader", "x", 3);
    a.admittedAt(a.find("reader"), "x");
    await one.flush();
    expect(store.calls.write).toBe(0);
    const b = two.table("t", "s", "articles", "2026-11", true);
    await b.admit("reader", "y", 3);
    expect(a.peek("reader")).toBe("x");
    await a.refresh("reader");
    expect(a.peek("reader")).toEqual(["x", "y"]);
  });

  it("a refresh leaves a value with members still to be written as it is", async () => {
    const { one } = pair();
    const a = one.table("t", "s", "articles", "2026-11", true);
    await a.load("reader");
    a.tickSeen("reader", "unwritten");
    await a.refresh("reader");
    expect(a.peek("reader")).toBe("unwritten");
    expect(one.pendingCount).toBe(1);
  });
});

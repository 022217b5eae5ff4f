import { describe, expect, it } from "bun:test";
import { MemoryMeterStore } from "../../src/counters/memory-meter-store";
import { MeterCounters } from "../../src/counters/meter-counters";

/** Two processes' counters over one store, admitting seen members through it. */
function pair() {
  const store = new MemoryMeterStore();
  return {
    store,
    one: new MeterCounters(store, { exact: true }),
    two: new MeterCounters(store, { exact: true }),
  };
}

describe("seen members admitted by the store", () => {
  it("admits under the allowance only, and says when the member was already there", async () => {
    const { one, two } = pair();
    const a = one.table("t", "s", "articles", "2026-11", true);
    const b = two.table("t", "s", "articles", "2026-11", true);
    expect(a.exact).toBe(true);
    expect(await a.admit("reader", "x", 2)).toMatchObject({ outcome: "added", before: 0 });
    expect(await b.admit("reader", "y", 2)).toMatchObject({ outcome: "added", before: 1 });
    expect(await b.admit("reader", "x", 2)).toMatchObject({ outcome: "member", before: 2 });
    expect(await a.admit("reader", "z", 2)).toMatchObject({ outcome: "full", before: 2 });
  });

  it("holds an admitted member as written (the flush writes nothing), and a refresh reads the others' members", async () => {
    const { store, one, two } = pair();
    const a = one.table("t", "s", "articles", "2026-11", true);
    await a.load("reader");
    await a.admit("reader", "x", 3);
    a.admittedAt(a.find("reader"), "x", 0);
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

describe("count meters' calls admitted by the store", () => {
  it("admits below the allowance only, across two processes' counters, and remembers the key id", async () => {
    const { store, one, two } = pair();
    const a = one.table("t", "s", "calls", "2026-11-26", false);
    const b = two.table("t", "s", "calls", "2026-11-26", false);
    expect(a.exact).toBe(true);
    expect(a.keyId).toBeNull();
    expect(await a.admit("reader", "", 2)).toMatchObject({ outcome: "added", before: 0 });
    expect(a.keyId).not.toBeNull();
    expect(await b.admit("reader", "", 2)).toMatchObject({ outcome: "added", before: 1 });
    expect(await a.admit("reader", "", 2)).toMatchObject({ outcome: "full", before: 2 });
    expect(await b.admit("reader", "", 2)).toMatchObject({ outcome: "full" });
    expect((await store.load([])).size).toBe(0);
  });

  it("holds an admitted call as written (the flush writes nothing) and a refused one as spent", async () => {
    const { store, one, two } = pair();
    const a = one.table("t", "s", "calls", "2026-11-26", false);
    await a.load("reader");
    // Another process took one call meanwhile: the store says so, and the held count follows.
    await two.table("t", "s", "calls", "2026-11-26", false).admit("reader", "", 3);
    const admitted = await a.admit("reader", "", 3);
    a.admittedAt(a.find("reader"), "", admitted.before);
    expect(a.peek("reader")).toBe(2);
    await one.flush();
    expect(store.calls.write).toBe(0);
    a.fullAt(a.find("reader"), 3);
    expect(a.peek("reader")).toBe(3);
    // A refresh never lowers a count (counts only grow within a period).
    await a.refresh("reader");
    expect(a.peek("reader")).toBe(3);
  });
});

import { describe, expect, it } from "bun:test";
import { MemoryMeterStore } from "../../src/counters/memory-meter-store";
import { MeterCounters } from "../../src/counters/meter-counters";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { seedSite, startHarness } from "../helpers/harness";

const MINUTE = 60_000;

/** Counters over an in-memory store with a clock the test moves. */
function counters() {
  let now = 0;
  const store = new MemoryMeterStore();
  const meters = new MeterCounters(store, { now: () => now });
  return { meters, store, advance: (ms: number) => (now += ms) };
}

describe("meter counters: a past period's table is dropped", () => {
  it("once a later period began and no flush found it ticked for a minute", async () => {
    const { meters, store, advance } = counters();
    const november = meters.table("t", "s", "calls", "2026-11", false);
    await november.load("reader");
    for (let i = 0; i < 3; i++) november.tickCount("reader");
    const december = meters.table("t", "s", "calls", "2026-12", false);
    await december.load("reader");
    december.tickCount("reader");
    expect(meters.retiredCount).toBe(1);
    expect(meters.size).toBe(2);

    await meters.flush();
    expect(meters.table("t", "s", "calls", "2026-11", false)).toBe(november); // not yet a minute
    advance(MINUTE + 1);
    await meters.flush();
    expect(meters.retiredCount).toBe(0);
    expect(meters.retiredTotal).toBe(1);
    expect(november.detached).toBe(true);
    expect(meters.size).toBe(1);
    // December is untouched; November reads back from the store as a new table.
    expect(december.peek("reader")).toBe(1);
    const again = meters.table("t", "s", "calls", "2026-11", false);
    expect(again).not.toBe(november);
    await again.load("reader");
    expect(again.peek("reader")).toBe(3);
    expect(store.calls.write).toBe(1);
  });

  it("keeps a retired table that is still ticked, and one whose ticks are not written yet", async () => {
    const { meters, store, advance } = counters();
    const october = meters.table("t", "s", "articles", "2026-10", true);
    await october.load("reader");
    october.tickSeen("reader", "a-1");
    meters.table("t", "s", "articles", "2026-11", true);
    advance(50_000);
    october.tickSeen("reader", "a-2"); // a straggler's tick renews it
    advance(20_000);
    await meters.flush();
    expect(october.detached).toBe(false);

    october.tickSeen("reader", "a-3");
    advance(2 * MINUTE);
    store.down = true;
    await expect(meters.flush()).rejects.toThrow("down");
    expect(october.detached).toBe(false);
    expect(october.peek("reader")).toEqual(["a-1", "a-2", "a-3"]);
    store.down = false;
    await meters.flush(); // written now; ticked since the last flush, so renewed
    expect(october.detached).toBe(false);
    advance(MINUTE + 1);
    await meters.flush();
    expect(october.detached).toBe(true);
    const back = meters.table("t", "s", "articles", "2026-10", true);
    await back.load("reader");
    expect(back.peek("reader")).toEqual(["a-1", "a-2", "a-3"]);
  });

  it("never drops the only table of a meter", async () => {
    const { meters, advance } = counters();
    const all = meters.table("t", "s", "$gift", "all", true);
    await all.load("g");
    all.tickSeen("g", "reader");
    advance(10 * MINUTE);
    await meters.flush();
    expect(all.detached).toBe(false);
    expect(meters.table("t", "s", "$gift", "all", true)).toBe(all);
  });
});

describe.each(storeKinds)("decide across a period's end (%s store)", (kind) => {
  it("drops the past month's table and goes on deciding with the right counts", async () => {
    const db = await freshDatabase(kind);
    const h = await startHarness(db);
    try {
      const { key } = await seedSite(h, "news", basicDocument());
      const decide = async (id: string) => {
        const res = await h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
          body: { features: ["paywall"], deviceId: "reader", content: signedContent({ id, section: "news" }) },
        });
        expect(res.status).toBe(200);
        return (await res.json()).decisions.paywall;
      };
      h.clock.set(Date.parse("2026-11-30T12:00:00Z"));
      await decide("a-1");
      await decide("a-2");
      h.clock.set(Date.parse("2026-12-01T12:00:00Z"));
      expect((await decide("a-3")).meters.articles.count).toBe(0); // a new month
      await h.deps.meters.flush(); // November's ticks are written; it was still in use until now
      expect(h.deps.meters.retiredTotal).toBe(0);
      h.clock.advance(2 * MINUTE);
      await h.deps.meters.flush();
      expect(h.deps.meters.retiredTotal).toBe(1);
      expect((await decide("a-4")).meters.articles.count).toBe(1);
      expect((await decide("a-4")).meters.articles.count).toBe(2);
      // The flush wrote November's two articles before its table went.
      await h.deps.meters.flush();
      h.clock.set(Date.parse("2026-11-30T13:00:00Z"));
      expect((await decide("a-1")).meters.articles.count).toBe(2);
    } finally {
      await h.stop();
      await db.drop();
    }
  }, 60_000);
});

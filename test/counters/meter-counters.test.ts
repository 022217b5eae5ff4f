import { describe, expect, it } from "bun:test";
import { MeterCounters, meterKey } from "../../src/counters/meter-counters";
import { freshDatabase, storeKinds } from "../helpers/databases";

describe.each(storeKinds)("meter counters (%s store)", (kind) => {
  it("reads back flushed counts and seen members in a new instance; an exclusive writer skips reads of keys never stored", async () => {
    const db = await freshDatabase(kind);
    try {
      const exclusive = kind === "embedded";
      const first = new MeterCounters(db.db, { exclusiveWriter: exclusive });
      await first.prime();
      const seenKey = meterKey("t", "s", "articles", "reader", "2026-11");
      const countKey = meterKey("t", "s", "calls", "reader", "2026-11-21");
      const seen = await first.read(seenKey, true);
      expect(first.tickSeen(seenKey, seen, "a-1")).toBe(true);
      expect(first.tickSeen(seenKey, seen, "a-1")).toBe(false);
      first.tickSeen(seenKey, seen, "a-2");
      const calls = await first.read(countKey, false);
      first.tickCount(countKey, calls);
      first.tickCount(countKey, calls);
      first.tickCount(countKey, calls);
      await first.flush();

      // A new process: it must learn the stored keys (prime) or it would think them absent.
      const second = new MeterCounters(db.db, { exclusiveWriter: exclusive });
      await second.prime();
      const again = await second.read(seenKey, true);
      expect(again.count).toBe(2);
      expect([...(again.seen ?? [])].sort()).toEqual(["a-1", "a-2"]);
      expect((await second.read(countKey, false)).count).toBe(3);
      expect(second.tickSeen(seenKey, again, "a-1")).toBe(false);
      expect((await second.read(meterKey("t", "s", "articles", "newcomer", "2026-11"), true)).count).toBe(0);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

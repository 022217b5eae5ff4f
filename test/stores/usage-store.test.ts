import { expect, it } from "bun:test";
import { MemoryUsageStore } from "../../src/recommendations/memory-store";
import { DrizzleUsageStore, type UsageStore } from "../../src/recommendations/store";
import { storeContract } from "../helpers/store-contract";

storeContract<UsageStore>(
  "the recommendation usage store",
  (_kind, db) => (db === null ? new MemoryUsageStore() : new DrizzleUsageStore(db)),
  (store) => {
    it("counts calls per tenant and UTC month, newest month first", async () => {
      const oct = Date.UTC(2026, 9, 31, 23, 59, 59);
      const nov = Date.UTC(2026, 10, 1, 0, 0, 0);
      await store().countCall("t1", oct);
      await store().countCall("t1", nov);
      await store().countCall("t1", nov + 1000);
      await store().countCall("t2", nov);
      expect(await store().usage("t1")).toEqual([
        { period: "2026-11", calls: 2 },
        { period: "2026-10", calls: 1 },
      ]);
      expect(await store().usage("t2")).toEqual([{ period: "2026-11", calls: 1 }]);
      expect(await store().usage("nobody")).toEqual([]);
    });

    it("counts concurrent calls exactly", async () => {
      const at = Date.UTC(2026, 11, 5);
      await Promise.all(Array.from({ length: 20 }, () => store().countCall("t3", at)));
      expect(await store().usage("t3")).toEqual([{ period: "2026-12", calls: 20 }]);
    });
  },
);

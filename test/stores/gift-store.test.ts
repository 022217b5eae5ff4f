import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Db } from "../../db/client";
import { DrizzleMeterStore } from "../../src/counters/drizzle-meter-store";
import { MemoryMeterStore } from "../../src/counters/memory-meter-store";
import type { MeterStore } from "../../src/counters/meter-store";
import { DrizzleGiftStore } from "../../src/gifts/drizzle-store";
import { MemoryGiftStore } from "../../src/gifts/memory-store";
import { type GiftRow, type GiftStore, REDEMPTION_METER, REDEMPTION_PERIOD } from "../../src/gifts/store";
import { rejects, storeContract } from "../helpers/store-contract";

const T0 = Date.UTC(2026, 10, 26, 12);
const DAY = 86_400_000;

interface World {
  store: GiftStore;
  /** Where redemptions are counted (the `$gift` seen counter), as decide counts them. */
  meters: MeterStore;
}

type NewGift = Omit<GiftRow, "revokedAt" | "createdAt">;

const gift = (tenantId: string, over: Partial<NewGift> = {}): NewGift => ({
  id: randomUUID(),
  tenantId,
  siteId: "s",
  gifterId: randomUUID(),
  contentId: "article-1",
  expiresAt: new Date(T0 + 7 * DAY),
  ...over,
});

storeContract<World>(
  "the gift store",
  (_kind, db) => {
    if (db === null) {
      const meters = new MemoryMeterStore();
      return { store: new MemoryGiftStore(meters), meters };
    }
    return { store: new DrizzleGiftStore(db as Db), meters: new DrizzleMeterStore(db as Db) };
  },
  (world) => {
    const store = () => world().store;
    const redeem = (tenantId: string, giftId: string, reader: string) =>
      world().meters.admitSeen(
        { tenant: tenantId, site: "s", meter: REDEMPTION_METER, period: REDEMPTION_PERIOD },
        giftId,
        reader,
        100,
      );

    it("mints within the month's allowance and records each link", async () => {
      const gifter = randomUUID();
      const row = gift("tm", { gifterId: gifter });
      expect(await store().remaining("tm", "s", gifter, "2026-11", 2)).toBe(2);
      expect(await store().mint(row, "2026-11", 2)).toBe(1);
      expect(await store().mint(gift("tm", { gifterId: gifter }), "2026-11", 2)).toBe(0);
      const spent = gift("tm", { gifterId: gifter });
      expect(await store().mint(spent, "2026-11", 2)).toBeNull();
      expect(await store().byId("tm", "s", spent.id)).toBeUndefined();
      expect(await store().remaining("tm", "s", gifter, "2026-11", 2)).toBe(0);
      // A lower limit never answers below zero; another month, site or a higher limit has room.
      expect(await store().remaining("tm", "s", gifter, "2026-11", 1)).toBe(0);
      expect(await store().remaining("tm", "s", gifter, "2026-11", 5)).toBe(3);
      expect(await store().mint(gift("tm", { gifterId: gifter }), "2026-11", 3)).toBe(0);
      expect(await store().mint(gift("tm", { gifterId: gifter }), "2026-12", 2)).toBe(1);
      expect(await store().mint(gift("tm", { gifterId: gifter, siteId: "s2" }), "2026-11", 2)).toBe(1);
      expect(await store().mint(gift("tm"), "2026-11", 0)).toBeNull();
      const stored = await store().byId("tm", "s", row.id);
      expect(stored).toMatchObject({ ...row, revokedAt: null });
      expect(stored?.createdAt).toBeInstanceOf(Date);
    });

    it("refuses a link id already stored, taking nothing of the allowance", async () => {
      const gifter = randomUUID();
      const row = gift("td", { gifterId: gifter });
      expect(await store().mint(row, "2026-11", 5)).toBe(4);
      expect(await rejects(store().mint(gift("td", { id: row.id, gifterId: gifter }), "2026-11", 5))).toBe(true);
      expect(await store().remaining("td", "s", gifter, "2026-11", 5)).toBe(4);
      expect(await rejects(store().mint(gift("td", { id: row.id.toUpperCase() }), "2026-11", 5))).toBe(true);
      expect((await store().byId("td", "s", row.id))?.gifterId).toBe(gifter);
    });

    it("refuses what is not a uuid, and answers uuids in lower case", async () => {
      expect(await rejects(store().mint(gift("tu", { gifterId: "not-a-uuid" }), "2026-11", 5))).toBe(true);
      expect(await rejects(store().mint(gift("tu", { id: "gift-1" }), "2026-11", 5))).toBe(true);
      expect(await rejects(store().byId("tu", "s", "gift-1"))).toBe(true);
      expect(await rejects(store().remaining("tu", "s", "nobody", "2026-11", 5))).toBe(true);
      const row = gift("tu", { id: randomUUID().toUpperCase(), gifterId: randomUUID().toUpperCase() });
      expect(await store().mint(row, "2026-11", 5)).toBe(4);
      expect(await store().byId("tu", "s", row.id.toLowerCase())).toMatchObject({
        id: row.id.toLowerCase(),
        gifterId: row.gifterId.toLowerCase(),
      });
      expect((await store().byTenantId("tu", row.id))?.id).toBe(row.id.toLowerCase());
      expect(await store().remaining("tu", "s", row.gifterId.toLowerCase(), "2026-11", 5)).toBe(4);
    });

    it("finds a gift only within its tenant (and site, by id)", async () => {
      const row = gift("tf", { siteId: "other" });
      await store().mint(row, "2026-11", 5);
      expect((await store().byTenantId("tf", row.id))?.siteId).toBe("other");
      expect(await store().byTenantId("elsewhere", row.id)).toBeUndefined();
      expect((await store().byId("tf", "other", row.id))?.id).toBe(row.id);
      expect(await store().byId("tf", "s", row.id)).toBeUndefined();
      expect(await store().byId("tf", "other", randomUUID())).toBeUndefined();
    });

    it("revokes once, keeping the first time, and lists revoked gifts until they expire", async () => {
      const at = new Date(T0);
      const live = gift("tr", { expiresAt: new Date(T0 + DAY) });
      const expiring = gift("tr", { expiresAt: new Date(T0 + 1000) });
      const kept = gift("tr");
      for (const row of [live, expiring, kept]) await store().mint(row, "2026-11", 10);
      expect((await store().revoke("tr", "s", live.id, at))?.revokedAt?.getTime()).toBe(T0);
      expect((await store().revoke("tr", "s", live.id, new Date(T0 + 5000)))?.revokedAt?.getTime()).toBe(T0);
      expect(await store().revoke("tr", "s", expiring.id, at)).toMatchObject({ id: expiring.id });
      expect(await store().revoke("tr", "other", kept.id, at)).toBeUndefined();
      expect(await store().revoke("elsewhere", "s", kept.id, at)).toBeUndefined();
      expect(await store().revoke("tr", "s", randomUUID(), at)).toBeUndefined();
      expect((await store().byId("tr", "s", kept.id))?.revokedAt).toBeNull();
      const ours = (now: number) =>
        store()
          .revokedSince(new Date(now))
          .then((rows) => rows.filter((r) => [live.id, expiring.id, kept.id].includes(r.id)));
      expect((await ours(T0)).sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime())).toEqual([
        { id: expiring.id, expiresAt: new Date(T0 + 1000) },
        { id: live.id, expiresAt: new Date(T0 + DAY) },
      ]);
      expect(await ours(T0 + 1000)).toEqual([{ id: live.id, expiresAt: new Date(T0 + DAY) }]);
    });

    it("reports mints and redemptions per gifter and per article, most minted first", async () => {
      const [ann, bob, cyd] = [randomUUID(), randomUUID(), randomUUID()].sort();
      const a1 = gift("ta", { gifterId: ann as string, contentId: "b-article" });
      const a2 = gift("ta", { gifterId: ann as string, contentId: "a-article" });
      const b1 = gift("ta", { gifterId: bob as string, contentId: "b-article" });
      const c1 = gift("ta", { gifterId: cyd as string, contentId: "c-article" });
      for (const row of [c1, b1, a1, a2]) await store().mint(row, "2026-11", 10);
      await store().mint(gift("ta", { siteId: "other", gifterId: ann as string }), "2026-11", 10);
      await redeem("ta", a1.id, "r1");
      await redeem("ta", a1.id, "r2");
      await redeem("ta", a1.id, "r2");
      await redeem("ta", b1.id, "r1");
      // A redemption of another site's counter with the same subject is not this site's.
      await world().meters.admitSeen(
        { tenant: "ta", site: "other", meter: REDEMPTION_METER, period: REDEMPTION_PERIOD },
        c1.id,
        "r9",
        100,
      );
      expect(await store().attribution("ta", "s")).toEqual({
        gifters: [
          { gifter: ann as string, mints: 2, redemptions: 2 },
          { gifter: bob as string, mints: 1, redemptions: 1 },
          { gifter: cyd as string, mints: 1, redemptions: 0 },
        ],
        articles: [
          { contentId: "b-article", mints: 2, redemptions: 3 },
          { contentId: "a-article", mints: 1, redemptions: 0 },
          { contentId: "c-article", mints: 1, redemptions: 0 },
        ],
      });
      expect(await store().attribution("ta", "none")).toEqual({ gifters: [], articles: [] });
    });

    it("hands out copies: changing a returned row changes nothing stored", async () => {
      const row = gift("tc");
      await store().mint(row, "2026-11", 5);
      const read = await store().byId("tc", "s", row.id);
      (read as GiftRow).contentId = "changed";
      read?.expiresAt.setTime(0);
      expect(await store().byId("tc", "s", row.id)).toMatchObject({ contentId: "article-1", expiresAt: row.expiresAt });
      row.contentId = "changed too";
      expect((await store().byTenantId("tc", row.id))?.contentId).toBe("article-1");
    });
  },
);

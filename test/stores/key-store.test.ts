import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { MemoryKeyStore } from "../../src/keys/memory-store";
import { DrizzleKeyStore, type KeyStore, type NewKeyRow } from "../../src/keys/store";
import { rejects, storeContract } from "../helpers/store-contract";

const key = (over: Partial<NewKeyRow> = {}): NewKeyRow => ({
  id: randomUUID(),
  tenantId: "t1",
  siteId: "news",
  name: "web",
  prefix: "svc_abcdef",
  hash: randomUUID().replaceAll("-", ""),
  ...over,
});

storeContract<KeyStore>(
  "the key store",
  (_kind, db) => (db === null ? new MemoryKeyStore() : new DrizzleKeyStore(db)),
  (store) => {
    it("inserts a key with the defaults and finds it by hash and by id", async () => {
      const row = key({ permissions: ["decide"] });
      const created = await store().insert(row);
      expect(created).toMatchObject({
        id: row.id,
        permissions: ["decide"],
        expiresAt: null,
        revokedAt: null,
        requestCount: 0,
        lastUsedOn: null,
      });
      expect(created.createdAt).toBeInstanceOf(Date);
      expect((await store().byHash(row.hash))?.id).toBe(row.id);
      expect((await store().byId(row.id))?.hash).toBe(row.hash);
      expect(await store().byHash("nope")).toBeUndefined();
      expect(await store().byId(randomUUID())).toBeUndefined();
      expect((await store().insert(key())).permissions).toEqual([]);
    });

    it("refuses a second key with the same hash or id", async () => {
      const row = await store().insert(key());
      expect(await rejects(store().insert(key({ hash: row.hash })))).toBe(true);
      expect(await rejects(store().insert(key({ id: row.id })))).toBe(true);
    });

    it("lists a site's keys newest first, and only that site's", async () => {
      const base = Date.UTC(2026, 10, 26, 12);
      const made = [];
      for (let i = 0; i < 3; i++)
        made.push(await store().insert(key({ tenantId: "t2", siteId: "s", createdAt: new Date(base + i * 1000) })));
      await store().insert(key({ tenantId: "t2", siteId: "other" }));
      const listed = await store().listForSite("t2", "s");
      expect(listed.map((k) => k.id)).toEqual(made.reverse().map((k) => k.id));
      expect(await store().listForSite("t2", "none")).toEqual([]);
    });

    it("revokes once, keeping the first date, and lists only usable keys", async () => {
      const at = new Date(Date.UTC(2026, 10, 26, 12));
      const revoked = await store().insert(key({ tenantId: "t3" }));
      const expired = await store().insert(key({ tenantId: "t3", expiresAt: new Date(at.getTime() - 1) }));
      const later = await store().insert(key({ tenantId: "t3", expiresAt: new Date(at.getTime() + 60_000) }));
      const forever = await store().insert(key({ tenantId: "t3" }));
      expect((await store().revoke(revoked.id, at))?.revokedAt?.getTime()).toBe(at.getTime());
      expect((await store().revoke(revoked.id, new Date(at.getTime() + 5000)))?.revokedAt?.getTime()).toBe(
        at.getTime(),
      );
      expect(await store().revoke(randomUUID(), at)).toBeUndefined();
      const usable = (await store().listUsable(at)).filter((k) => k.tenantId === "t3").map((k) => k.id);
      expect(usable.sort()).toEqual([later.id, forever.id].sort());
      expect(usable).not.toContain(expired.id);
    });

    it("adds usage and moves the last-used day forward only", async () => {
      const a = await store().insert(key({ tenantId: "t4" }));
      const b = await store().insert(key({ tenantId: "t4" }));
      await store().addUsage([]);
      await store().addUsage([
        { id: a.id, delta: 3, lastUsedOn: "2026-11-26" },
        { id: b.id, delta: 1, lastUsedOn: "2026-11-20" },
      ]);
      await store().addUsage([{ id: a.id, delta: 2, lastUsedOn: "2026-11-25" }]);
      expect(await store().byId(a.id)).toMatchObject({ requestCount: 5, lastUsedOn: "2026-11-26" });
      expect(await store().byId(b.id)).toMatchObject({ requestCount: 1, lastUsedOn: "2026-11-20" });
    });

    it("hands out copies: changing a returned row changes nothing stored", async () => {
      const row = await store().insert(key({ tenantId: "t5", permissions: ["decide"] }));
      row.permissions.push("admin");
      row.name = "changed";
      expect(await store().byId(row.id)).toMatchObject({ name: "web", permissions: ["decide"] });
    });
  },
);

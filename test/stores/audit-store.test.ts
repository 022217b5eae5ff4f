import { expect, it } from "bun:test";
import { MemoryAuditStore } from "../../src/audit/memory-store";
import type { AuditRecord } from "../../src/audit/model";
import { type AuditStore, DrizzleAuditStore } from "../../src/audit/store";
import { storeContract } from "../helpers/store-contract";

const entry = (i: number, tenantId: string | null, siteId: string | null): AuditRecord => ({
  at: new Date(Date.UTC(2026, 10, 26, 12, 0, i)),
  actor: i % 2 === 0 ? "operator" : "console:ops@example.com",
  tenantId,
  siteId,
  action: "POST /tenants/:tenant/sites/:site/deploy",
  target: `tenant=${tenantId} site=${siteId}`,
  summary: `deploy ${i}`,
  // Entry 1 stands for one recorded before the words were kept.
  words: i === 1 ? "" : `document version ${i} deployed live on site ${siteId} by ops`,
});

storeContract<AuditStore>(
  "the audit store",
  (_kind, db) => (db === null ? new MemoryAuditStore() : new DrizzleAuditStore(db)),
  (store) => {
    it("lists newest first, at most the limit, with the fields recorded", async () => {
      for (let i = 1; i <= 5; i++) await store().record(entry(i, "t1", i % 2 === 0 ? "news" : "sport"));
      const listed = await store().list({ limit: 3 });
      expect(listed.map((e) => e.summary)).toEqual(["deploy 5", "deploy 4", "deploy 3"]);
      expect(listed[0]).toMatchObject({
        at: "2026-11-26T12:00:05.000Z",
        actor: "console:ops@example.com",
        tenant: "t1",
        site: "sport",
        action: "POST /tenants/:tenant/sites/:site/deploy",
        target: "tenant=t1 site=sport",
        words: "document version 5 deployed live on site sport by ops",
      });
    });

    it("puts an entry from before the words were kept in words from its action, target and actor", async () => {
      await store().record(entry(1, "t3", "news"));
      const [old] = await store().list({ tenantId: "t3", limit: 1 });
      expect(old?.words).toBe("a document deployed live on site news by ops@example.com");
    });

    it("filters by tenant and site, and pages with before", async () => {
      await store().record(entry(6, "t2", null));
      expect((await store().list({ tenantId: "t2", limit: 10 })).map((e) => e.summary)).toEqual(["deploy 6"]);
      const news = await store().list({ tenantId: "t1", siteId: "news", limit: 10 });
      expect(news.map((e) => e.summary)).toEqual(["deploy 4", "deploy 2"]);
      const page = await store().list({ tenantId: "t1", before: news[0]?.id, limit: 10 });
      expect(page.map((e) => e.summary)).toEqual(["deploy 3", "deploy 2", "deploy 1"]);
      expect(await store().list({ tenantId: "nobody", limit: 10 })).toEqual([]);
    });
  },
);

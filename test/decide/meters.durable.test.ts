import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { counterDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { seedSite, startHarness } from "../helpers/harness";

describe.each(storeKinds)("meters are durable in Postgres (%s store)", (kind) => {
  it("keeps every tick across a graceful restart, and a new process reads the flushed values", async () => {
    const db = await freshDatabase(kind);
    try {
      let h = await startHarness(db);
      const { key } = await seedSite(h, "news", counterDocument());
      const hit = async () => {
        const res = await h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", "x-api-key": key },
          body: { features: ["counter"], deviceId: "reader-1" },
        });
        expect(res.status).toBe(200);
        return (await res.json()).decisions.counter.meters.hits.count as number;
      };
      for (let i = 0; i < 7; i++) expect(await hit()).toBe(i);
      await h.stop();
      h = await startHarness(db);
      expect(await hit()).toBe(7);
      await h.stop();
    } finally {
      await db.drop();
    }
  });

  it("merges a failed flush back and writes it on the next one", async () => {
    const db = await freshDatabase(kind);
    try {
      const h = await startHarness(db);
      const { key } = await seedSite(h, "news", counterDocument());
      const hit = () =>
        h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", "x-api-key": key },
          body: { features: ["counter"], deviceId: "reader-2" },
        });
      await hit();
      await hit();
      // Break the table for one flush: the deltas must survive it.
      await db.db.execute(sql.raw("alter table meter_counts rename to meter_counts_gone"));
      await h.deps.flusher.flushAll();
      expect(h.deps.meters.pendingCount).toBe(1);
      await db.db.execute(sql.raw("alter table meter_counts_gone rename to meter_counts"));
      await hit();
      await h.deps.flusher.flushAll();
      expect(h.deps.meters.pendingCount).toBe(0);
      const rows = rowsOf<{ count: number }>(
        await db.db.execute(sql`select count from meter_counts where subject = ${"reader-2"}`),
      );
      expect(Number(rows[0]?.count)).toBe(3);
      await h.stop();
    } finally {
      await db.drop();
    }
  });
});

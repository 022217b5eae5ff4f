import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { DrizzleMeterStore } from "../../src/counters/drizzle-meter-store";
import { countOf, MeterCounters } from "../../src/counters/meter-counters";
import { storeKinds } from "../helpers/databases";
import { upgradeFrom } from "../helpers/migrations";

describe.each(storeKinds)("migration 0002 (meter keys), %s store", (kind) => {
  it("carries every stored count and seen member over to rows under a meter key", async () => {
    await upgradeFrom(
      kind,
      "0001_identity",
      async (before) => {
        await before.db.execute(sql`insert into meter_counts (tenant_id, site_id, meter, subject, period, count) values
        ('default', 'news', 'api', 'reader-1', '2026-11', 7),
        ('default', 'news', 'api', 'reader-2', '2026-11', 2),
        ('default', 'news', 'api', 'reader-1', '2026-10', 40),
        ('other', 'news', 'api', 'reader-1', '2026-11', 5)`);
        await before.db.execute(sql`insert into meter_seen (tenant_id, site_id, meter, subject, period, item) values
        ('default', 'news', 'articles', 'reader-1', '2026-11', 'a-1'),
        ('default', 'news', 'articles', 'reader-1', '2026-11', 'a-2'),
        ('default', 'news', 'articles', 'reader-3', '2026-11', 'a-1')`);
      },
      async (after) => {
        const keys = rowsOf<{ n: number }>(await after.db.execute(sql`select count(*)::int as n from meter_keys`));
        // (default, news, api) in two periods, (other, news, api), (default, news, articles).
        expect(keys[0]?.n).toBe(4);
        const counters = new MeterCounters(new DrizzleMeterStore(after.db), { exclusiveWriter: kind === "embedded" });
        await counters.prime();
        const api = counters.table("default", "news", "api", "2026-11", false);
        const october = counters.table("default", "news", "api", "2026-10", false);
        const otherTenant = counters.table("other", "news", "api", "2026-11", false);
        const articles = counters.table("default", "news", "articles", "2026-11", true);
        for (const [table, subject] of [
          [api, "reader-1"],
          [api, "reader-2"],
          [api, "reader-9"],
          [october, "reader-1"],
          [otherTenant, "reader-1"],
          [articles, "reader-1"],
          [articles, "reader-3"],
        ] as const) {
          await table.load(subject);
        }
        expect([api.peek("reader-1"), api.peek("reader-2"), api.peek("reader-9")]).toEqual([7, 2, 0]);
        expect([october.peek("reader-1"), otherTenant.peek("reader-1")]).toEqual([40, 5]);
        expect([...(articles.peek("reader-1") as string[])].sort()).toEqual(["a-1", "a-2"]);
        expect(articles.peek("reader-3")).toBe("a-1");

        // New ticks land on the migrated rows, under the same keys.
        api.tickCount("reader-1");
        articles.tickSeen("reader-3", "a-9");
        await counters.flush();
        const again = new MeterCounters(new DrizzleMeterStore(after.db), { exclusiveWriter: kind === "embedded" });
        await again.prime();
        const apiAgain = again.table("default", "news", "api", "2026-11", false);
        const articlesAgain = again.table("default", "news", "articles", "2026-11", true);
        await apiAgain.load("reader-1");
        await articlesAgain.load("reader-3");
        expect(apiAgain.peek("reader-1")).toBe(8);
        expect(countOf(articlesAgain.peek("reader-3") ?? 0)).toBe(2);
        const stillFour = rowsOf<{ n: number }>(await after.db.execute(sql`select count(*)::int as n from meter_keys`));
        expect(stillFour[0]?.n).toBe(4);
      },
    );
  }, 60_000);
});

import { describe, expect, it } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { MIGRATIONS_FOLDER, openDatabase, rowsOf } from "../../db/client";
import { countOf, MeterCounters } from "../../src/counters/meter-counters";
import { emptyServerDatabase, type StoreKind, storeKinds } from "../helpers/databases";

/** A copy of the committed migrations up to and including `lastTag`. */
function migrationsUpTo(lastTag: string): string {
  const folder = mkdtempSync(join(tmpdir(), "svc-migrations-"));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalFile = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((e) => e.tag === lastTag);
  if (last < 0) throw new Error(`no migration ${lastTag}`);
  journal.entries = journal.entries.slice(0, last + 1);
  writeFileSync(journalFile, JSON.stringify(journal));
  return folder;
}

/** Where a database of `kind` lives across two opens: a data folder, or a new database on the server. */
async function place(kind: StoreKind): Promise<{ options: { url?: string; dataDir?: string }; drop(): Promise<void> }> {
  if (kind === "embedded") {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-upgrade-"));
    return { options: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const empty = await emptyServerDatabase();
  return { options: { url: empty.url }, drop: empty.drop };
}

describe.each(storeKinds)("migration 0002 (meter keys), %s store", (kind) => {
  it("carries every stored count and seen member over to rows under a meter key", async () => {
    const where = await place(kind);
    const earlier = migrationsUpTo("0001_identity");
    try {
      const before = await openDatabase({ ...where.options, migrationsFolder: earlier });
      await before.db.execute(sql`insert into meter_counts (tenant_id, site_id, meter, subject, period, count) values
        ('default', 'news', 'api', 'reader-1', '2026-11', 7),
        ('default', 'news', 'api', 'reader-2', '2026-11', 2),
        ('default', 'news', 'api', 'reader-1', '2026-10', 40),
        ('other', 'news', 'api', 'reader-1', '2026-11', 5)`);
      await before.db.execute(sql`insert into meter_seen (tenant_id, site_id, meter, subject, period, item) values
        ('default', 'news', 'articles', 'reader-1', '2026-11', 'a-1'),
        ('default', 'news', 'articles', 'reader-1', '2026-11', 'a-2'),
        ('default', 'news', 'articles', 'reader-3', '2026-11', 'a-1')`);
      await before.close();

      const after = await openDatabase(where.options);
      try {
        const keys = rowsOf<{ n: number }>(await after.db.execute(sql`select count(*)::int as n from meter_keys`));
        // (default, news, api) in two periods, (other, news, api), (default, news, articles).
        expect(keys[0]?.n).toBe(4);
        const counters = new MeterCounters(after.db, { exclusiveWriter: kind === "embedded" });
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
        const again = new MeterCounters(after.db, { exclusiveWriter: kind === "embedded" });
        await again.prime();
        const apiAgain = again.table("default", "news", "api", "2026-11", false);
        const articlesAgain = again.table("default", "news", "articles", "2026-11", true);
        await apiAgain.load("reader-1");
        await articlesAgain.load("reader-3");
        expect(apiAgain.peek("reader-1")).toBe(8);
        expect(countOf(articlesAgain.peek("reader-3") ?? 0)).toBe(2);
        const stillFour = rowsOf<{ n: number }>(await after.db.execute(sql`select count(*)::int as n from meter_keys`));
        expect(stillFour[0]?.n).toBe(4);
      } finally {
        await after.close();
      }
    } finally {
      rmSync(earlier, { recursive: true, force: true });
      await where.drop();
    }
  }, 60_000);
});

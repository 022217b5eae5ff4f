import { describe, expect, it } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { MIGRATIONS_FOLDER, openDatabase, rowsOf } from "../../db/client";
import { createLogger } from "../../src/logger";
import { SealedText } from "../../src/mail/sealed-text";
import { SiteRegistry } from "../../src/sites/registry";
import { DrizzleSiteStore } from "../../src/sites/store";
import { basicDocument } from "../fixtures/documents";
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

const doc = (keys: { id: string; secret: string }[]) => JSON.stringify(basicDocument({ contentKeys: keys }));

describe.each(storeKinds)("migration 0015 (content keys), %s store", (kind) => {
  it("moves each key's secret out of every stored version (the live one's first) and seals it at start", async () => {
    const where = await place(kind);
    const earlier = migrationsUpTo("0014_mail_budget");
    try {
      const before = await openDatabase({ ...where.options, migrationsFolder: earlier });
      await before.db.execute(sql`insert into tenants (id, is_default) values ('default', true)`);
      await before.db.execute(sql`insert into sites (tenant_id, id, live_version, preview_version) values
        ('default', 'news', 2, 3), ('default', 'quiet', null, null)`);
      await before.db.execute(sql`insert into site_documents (tenant_id, site_id, version, stage, document) values
        ('default', 'news', 1, 'live', ${doc([
          { id: "k1", secret: "old-secret-of-k1" },
          { id: "k2", secret: "only-secret-of-k2" },
        ])}::jsonb),
        ('default', 'news', 2, 'live', ${doc([{ id: "k1", secret: "live-secret-of-k1" }])}::jsonb),
        ('default', 'news', 3, 'preview', ${doc([
          { id: "k1", secret: "staged-secret-of-k1" },
          { id: "k3", secret: "staged-secret-of-k3" },
        ])}::jsonb)`);
      await before.close();

      const after = await openDatabase(where.options);
      try {
        const clear = rowsOf<{ key_id: string; secret: string }>(
          await after.db.execute(sql`select key_id, secret from content_keys order by key_id`),
        );
        expect(clear).toEqual([
          { key_id: "k1", secret: "live-secret-of-k1" },
          { key_id: "k2", secret: "only-secret-of-k2" },
          { key_id: "k3", secret: "staged-secret-of-k3" },
        ]);
        const documents = rowsOf<{ d: string }>(
          await after.db.execute(sql`select document::text as d from site_documents`),
        );
        expect(documents.map((r) => r.d).join()).not.toContain("secret-of");
        const v1 = rowsOf<{ keys: unknown }>(
          await after.db.execute(sql`select document->'contentKeys' as keys from site_documents where version = 1`),
        );
        expect(v1[0]?.keys).toEqual([{ id: "k1" }, { id: "k2" }]);

        // At start the registry seals them, then compiles the documents with them.
        const sealed = new SealedText("test-secret-test-secret-test-secret-0123", "content-key");
        const store = new DrizzleSiteStore(after.db, sealed);
        const registry = new SiteRegistry(
          store,
          createLogger("silent", () => {}),
        );
        await registry.loadAll();
        const stored = rowsOf<{ secret: string }>(await after.db.execute(sql`select secret from content_keys`));
        expect(stored.every((r) => r.secret.startsWith("sealed:v1:"))).toBe(true);
        const [news] = await store.loadSites({ tenantId: "default", siteId: "news" });
        expect([...(news?.contentSecrets ?? [])].sort()).toEqual([
          ["k1", "live-secret-of-k1"],
          ["k2", "only-secret-of-k2"],
          ["k3", "staged-secret-of-k3"],
        ]);
        expect(registry.site("default", "news")?.live).not.toBeNull();
        expect(registry.site("default", "news")?.preview).not.toBeNull();
        expect(await store.sealContentKeys()).toBe(0);
      } finally {
        await after.close();
      }
    } finally {
      rmSync(earlier, { recursive: true, force: true });
      await where.drop();
    }
  }, 60_000);
});

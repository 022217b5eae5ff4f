import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { createLogger } from "../../src/logger";
import { SealedText } from "../../src/mail/sealed-text";
import { SiteRegistry } from "../../src/sites/registry";
import { DrizzleSiteStore } from "../../src/sites/store";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { upgradeFrom } from "../helpers/migrations";

const doc = (keys: { id: string; secret: string }[]) => JSON.stringify(basicDocument({ contentKeys: keys }));

describe.each(storeKinds)("migration 0015 (content keys), %s store", (kind) => {
  it("moves each key's secret out of every stored version (the live one's first) and seals it at start", async () => {
    await upgradeFrom(
      kind,
      "0014_mail_budget",
      async (before) => {
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
      },
      async (after) => {
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
      },
    );
  }, 60_000);
});

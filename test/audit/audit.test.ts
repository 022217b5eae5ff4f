import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

interface Entry {
  id: number;
  actor: string;
  tenant: string | null;
  site: string | null;
  action: string;
  target: string;
  summary: string;
  words: string;
}

describe.each(storeKinds)("audit log (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let keyId = "";
  let keyValue = "";

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    ({ key: keyValue, keyId } = await seedSite(h, "news", basicDocument()));
  }, 120_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const entries = async (query = "") => {
    const res = await h.admin("GET", `/admin/audit${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { entries: Entry[] }).entries;
  };

  it("records each change that succeeded, newest first, with its target and a summary", async () => {
    const all = await entries();
    expect(all.map((e) => e.action)).toEqual([
      "POST /tenants/:tenant/sites/:site/keys",
      "POST /tenants/:tenant/sites/:site/deploy",
      "POST /tenants/:tenant/sites",
      "POST /tenants",
    ]);
    const [issued, deployed, site, tenant] = all as [Entry, Entry, Entry, Entry];
    expect(issued).toMatchObject({
      actor: "operator",
      tenant: "default",
      site: "news",
      target: "tenant=default site=news",
    });
    expect(issued.summary).toBe(`key ${keyId} "test key" [default]`);
    expect(deployed.summary).toBe("live version 1");
    expect(site.summary).toBe("site news");
    expect(tenant).toMatchObject({ tenant: "default", site: null, summary: "tenant default (default)" });
    expect(all.map((e) => e.words)).toEqual([
      "key 'test key' issued on site news by the operator token",
      "document version 1 deployed live on site news by the operator token",
      "site news created in tenant default by the operator token",
      "tenant default created as the default tenant by the operator token",
    ]);
  });

  it("never holds a secret: not a key's value, a preview token or a service's settings", async () => {
    const token = await h.admin("POST", "/admin/tenants/default/sites/news/preview-tokens", { ttlSeconds: 60 });
    expect(token.status).toBe(200);
    const tokenText = await token.text();
    const service = await h.admin("PUT", "/admin/tenants/default/services/recombee", {
      databaseId: "db",
      token: "recombee-secret-token-value",
    });
    expect(service.status).toBeLessThan(300);
    const text = JSON.stringify(await entries());
    expect(text).not.toContain(keyValue);
    expect(text).not.toContain("recombee-secret-token-value");
    const minted = JSON.parse(tokenText) as { token: string };
    expect(minted.token.length).toBeGreaterThan(20);
    expect(text).not.toContain(minted.token);
    const [serviceEntry, tokenEntry] = (await entries()) as [Entry, Entry];
    expect(serviceEntry).toMatchObject({
      action: "PUT /tenants/:tenant/services/:service",
      target: "tenant=default service=recombee",
      summary: "",
    });
    expect(tokenEntry.summary).toMatch(/^preview token until 2026-/);
    expect(serviceEntry.words).toBe("recombee settings saved for tenant default by the operator token");
    expect(tokenEntry.words).toMatch(
      /^preview token minted for site news until 2026-\d\d-\d\d \d\d:\d\d UTC by the operator token$/,
    );
  });

  it("records revocations and grants, not reads or refusals, and filters by site", async () => {
    const before = (await entries()).length;
    expect((await h.admin("GET", "/admin/tenants/default/sites/news/keys")).status).toBe(200);
    const bad = await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: { schemaVersion: 9 } });
    expect(bad.status).toBe(422);
    expect((await entries()).length).toBe(before);

    expect((await h.admin("POST", `/admin/tenants/default/sites/news/keys/${keyId}/revoke`)).status).toBe(200);
    const user = await h.admin("POST", "/admin/tenants/default/users", { email: "audit@example.com" });
    const userId = ((await user.json()) as { user: { id: string } }).user.id;
    await h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" });
    const [grant, created, revoked] = (await entries()) as [Entry, Entry, Entry];
    expect(grant).toMatchObject({ target: `tenant=default user=${userId}`, summary: "grant premium" });
    expect(created.summary).toBe(`user ${userId}`);
    expect(revoked).toMatchObject({ action: "POST /tenants/:tenant/sites/:site/keys/:keyId/revoke", site: "news" });
    expect(revoked.words).toBe("key 'test key' revoked on site news by the operator token");
    expect(grant.words).toBe(`grant 'premium' given to user ${userId} by the operator token`);
    expect(created.words).toBe(`user '${userId}' created in tenant default by the operator token`);

    const newsOnly = await entries("?tenant=default&site=news");
    expect(newsOnly.every((e) => e.site === "news")).toBe(true);
    expect(newsOnly.length).toBeGreaterThanOrEqual(4);
    expect(await entries("?tenant=default&site=elsewhere")).toEqual([]);
  });

  it("pages with limit and before, and refuses a bad query", async () => {
    const res = await h.admin("GET", "/admin/audit?limit=2");
    const page = (await res.json()) as { entries: Entry[]; next: number | null };
    expect(page.entries.length).toBe(2);
    expect(page.next).toBe((page.entries[1] as Entry).id);
    const rest = await entries(`?before=${page.next}`);
    expect((rest[0] as Entry).id).toBeLessThan(page.next as number);
    expect((await h.admin("GET", "/admin/audit?limit=0")).status).toBe(422);
    expect((await h.admin("GET", "/admin/audit?limit=abc")).status).toBe(422);
    expect((await h.request("GET", "/admin/audit")).status).toBe(401);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const MISSING = { error: { code: "unauthorized", message: "Missing API key." } };
const INVALID = { error: { code: "unauthorized", message: "Invalid or missing API key." } };
const WRONG_SITE = { error: { code: "forbidden", message: "This key is not pinned to the selected site." } };

describe.each(storeKinds)("API key guard (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let newsKey: { key: string; keyId: string };
  let sportKey: { key: string; keyId: string };

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    newsKey = await seedSite(h, "news", basicDocument());
    sportKey = await seedSite(h, "sport", basicDocument());
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const decide = (headers: Record<string, string>, site = "news") =>
    h.request("POST", "/v1/decide", { headers: { "x-svc-site-id": site, ...headers }, body: { features: ["teaser"] } });

  it("accepts the key as Authorization: Bearer", async () => {
    expect((await decide({ authorization: `Bearer ${newsKey.key}` })).status).toBe(200);
  });

  it("accepts the key as x-api-key", async () => {
    expect((await decide({ "x-api-key": newsKey.key })).status).toBe(200);
  });

  it("answers 401 Missing API key. when no key is sent", async () => {
    const res = await decide({});
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject(MISSING);
  });

  it("refuses a session cookie on a key-only route instead of reading it", async () => {
    const res = await decide({ cookie: "svc.session_token=abc123" });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject(MISSING);
  });

  it.each([
    ["an unknown key", { authorization: "Bearer svc_0000000000000000000000000000000000000000" }],
    ["a malformed Authorization header", { authorization: "Basic abc" }],
    ["an empty bearer", { authorization: "Bearer " }],
    ["an unknown x-api-key", { "x-api-key": "svc_nope" }],
  ])("answers 401 Invalid or missing API key. for %s", async (_label, headers) => {
    const res = await decide(headers);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject(INVALID);
  });

  it("answers 403 for a key used for another site", async () => {
    const res = await decide({ authorization: `Bearer ${sportKey.key}` }, "news");
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject(WRONG_SITE);
  });

  it("works from its first request, and answers 401 on the next request after revoke", async () => {
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "rotating" });
    const { key, id } = await issued.json();
    expect((await decide({ authorization: `Bearer ${key}` })).status).toBe(200);
    const revoked = await h.admin("POST", `/admin/tenants/default/sites/news/keys/${id}/revoke`);
    expect(revoked.status).toBe(200);
    expect((await revoked.json()).key.status).toBe("revoked");
    const res = await decide({ authorization: `Bearer ${key}` });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject(INVALID);
  });

  it("answers 401 once a key with an expiry has passed it", async () => {
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "short", expiresInDays: 1 });
    const { key, id } = await issued.json();
    expect((await decide({ authorization: `Bearer ${key}` })).status).toBe(200);
    h.clock.advance(86_400_000 + 1000);
    const res = await decide({ authorization: `Bearer ${key}` });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject(INVALID);
    const list = await (await h.admin("GET", "/admin/tenants/default/sites/news/keys")).json();
    expect(list.keys.find((k: { id: string }) => k.id === id).status).toBe("expired");
  });

  it("keeps a revoked key revoked: revoking again changes nothing and it never works again", async () => {
    const issued = await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "gone" })).json();
    await h.admin("POST", `/admin/tenants/default/sites/news/keys/${issued.id}/revoke`);
    const again = await h.admin("POST", `/admin/tenants/default/sites/news/keys/${issued.id}/revoke`);
    expect((await again.json()).key.status).toBe("revoked");
    expect((await decide({ authorization: `Bearer ${issued.key}` })).status).toBe(401);
  });

  it("refuses to revoke a key through another site", async () => {
    const res = await h.admin("POST", `/admin/tenants/default/sites/sport/keys/${newsKey.keyId}/revoke`);
    expect(res.status).toBe(404);
    expect((await decide({ authorization: `Bearer ${newsKey.key}` })).status).toBe(200);
  });
});

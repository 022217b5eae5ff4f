import { beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { rowsOf } from "../../db/client";
import { basicDocument } from "../fixtures/documents";
import { addConsoleUsers, consoleClient, consoleMailbox, consoleSignIn } from "../helpers/console";
import { storeKinds } from "../helpers/databases";
import { siteWorld } from "../helpers/worlds";

describe.each(storeKinds)("console over HTTP (%s store)", (kind) => {
  const box = consoleMailbox();
  const w = siteWorld({
    document: basicDocument(),
    kind,
    mailTransport: box.transport,
    config: { SVC_IMPACT_SAMPLE_EVERY: "1" },
  });
  beforeAll(async () => {
    await addConsoleUsers(w.h, [
      ["ada@example.com", "admin"],
      ["vic@example.com", "viewer"],
      ["own@example.com", "owner"],
    ]);
  }, 60_000);

  it("sends a signed-out browser to the sign-in page, with a strict CSP", async () => {
    const client = consoleClient(w.h);
    const res = await client.get("/console");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/sign-in");
    const page = await client.get("/console/sign-in");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("content-security-policy")).not.toContain("unsafe-inline");
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.text).not.toMatch(/ style=/);
  });

  it("signs in by a mailed link, once; the cookie is scoped to /console and strict", async () => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    const session = [...client.jar.keys()];
    expect(session).toContain("svc.console_session");
    const home = await client.get("/console");
    expect(home.status).toBe(200);
    expect(home.text).toContain("ada@example.com (admin, tenant default)");
    expect(home.text).toContain("Create a site");
    // The same link a second time: refused.
    const link = new URL(box.lastLink("ada@example.com"));
    const again = consoleClient(w.h);
    await again.get(`${link.pathname}${link.search}`);
    expect((await again.post("/console/auth", { token: link.searchParams.get("token") as string })).status).toBe(403);
  });

  it("sweeps spent sign-in links at each sign-in: at most the one just spent is left", async () => {
    await consoleSignIn(w.h, box, "ada@example.com");
    await consoleSignIn(w.h, box, "ada@example.com");
    await consoleSignIn(w.h, box, "own@example.com");
    const rows = (await w.h.deps.database.db.execute(
      sql`select count(*)::int as n from console_tokens where kind = 'link' and used_at is not null`,
    )) as unknown;
    const n = (rowsOf<{ n: number }>(rows as never)[0] as { n: number }).n;
    expect(n).toBeLessThanOrEqual(1);
  });

  it("mails nobody for an address that is not a console user, and the page reads the same", async () => {
    const client = consoleClient(w.h);
    await client.get("/console/sign-in");
    const before = box.mails.length;
    const res = await client.post("/console/sign-in", { email: "stranger@example.com" });
    expect(res.status).toBe(200);
    expect(res.text).toContain("If that address is a console user");
    await w.h.deps.outbox.drain();
    expect(box.mails.length).toBe(before);
  });

  it("refuses a post without the CSRF token, with another's token, or from another origin", async () => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    await client.get("/console");
    expect((await client.post("/console/sites", { id: "x1", _csrf: "forged" })).status).toBe(403);
    const other = await consoleSignIn(w.h, box, "own@example.com");
    await other.get("/console");
    expect((await client.post("/console/sites", { id: "x2", _csrf: other.csrf() })).status).toBe(403);
    await client.get("/console");
    expect((await client.post("/console/sites", { id: "x3" }, { origin: "https://evil.example" })).status).toBe(403);
    const sites = (await (await w.h.admin("GET", "/admin/tenants/default/sites")).json()) as {
      sites: { id: string }[];
    };
    expect(sites.sites.map((s) => s.id)).not.toContain("x1");
    expect(sites.sites.map((s) => s.id)).not.toContain("x3");
  });

  it("never accepts the console cookie on the public or operator routes", async () => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    const cookie = `svc.console_session=${client.jar.get("svc.console_session")}`;
    const session = await w.h.request("GET", "/v1/id/get-session", { headers: { cookie, "x-svc-site-id": "news" } });
    expect(((await session.json()) as { user: unknown }).user).toBeNull();
    expect((await w.h.request("GET", "/admin/tenants", { headers: { cookie } })).status).toBe(401);
  });

  it("issues a key that works at once, shows it once, and revokes it after a confirmation", async () => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    await client.get("/console/sites/news/keys");
    const issued = await client.post("/console/sites/news/keys", { name: "From the console", expiresInDays: "30" });
    expect(issued.status).toBe(201);
    const key = issued.text.match(/<code id="new-key">([^<]+)<\/code>/)?.[1] as string;
    expect(key).toBeTruthy();
    const decide = () =>
      w.h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
        body: { features: ["paywall"], deviceId: "d-1" },
      });
    expect((await decide()).status).toBe(200);
    // Listed without its value.
    const listing = await client.get("/console/sites/news/keys");
    expect(listing.text).toContain("From the console");
    expect(listing.text).not.toContain(key);
    const keys = (await (await w.h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()) as {
      keys: { id: string; name: string }[];
    };
    const id = keys.keys.find((k) => k.name === "From the console")?.id as string;
    const confirm = await client.get(`/console/sites/news/keys/${id}/revoke`);
    expect(confirm.text).toContain("Revoke key From the console?");
    expect((await client.post(`/console/sites/news/keys/${id}/revoke`)).status).toBe(200);
    expect((await decide()).status).toBe(401);
  });

  it("checks the issue form as the admin API does, and issues nothing on a bad one", async () => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    await client.get("/console/sites/news/keys");
    const bad = await client.post("/console/sites/news/keys", { name: "x".repeat(101), expiresInDays: "0" });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain("<code>/name</code>");
    expect(bad.text).toContain("<code>/expiresInDays</code>");
    expect(bad.text).toContain('aria-invalid="true"');
    await client.get("/console/sites/news/keys");
    expect((await client.post("/console/sites/news/keys", { name: "nul\u0000" })).status).toBe(400);
  });

  it("shows a viewer the list without actions, and refuses a viewer's posts on the server", async () => {
    const client = await consoleSignIn(w.h, box, "vic@example.com");
    const page = await client.get("/console/sites/news/keys");
    expect(page.status).toBe(200);
    expect(page.text).toContain("test key");
    expect(page.text).not.toContain("Issue key");
    expect(page.text).not.toContain("Revoke");
    expect((await client.post("/console/sites/news/keys", { name: "sneaky" })).status).toBe(403);
    await client.get("/console");
    expect((await client.post("/console/sites/news/disable")).status).toBe(403);
    const keys = (await (await w.h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()) as {
      keys: { name: string }[];
    };
    expect(keys.keys.map((k) => k.name)).not.toContain("sneaky");
  });

  it("records console actions in the audit log under the user's name, shown on the audit page", async () => {
    const client = await consoleSignIn(w.h, box, "own@example.com");
    await client.get("/console");
    expect((await client.post("/console/sites", { id: "sport" })).status).toBe(201);
    const audit = await client.get("/console/audit");
    expect(audit.text).toContain("console:own@example.com");
    expect(audit.text).toContain("site sport");
    const entries = (await (await w.h.admin("GET", "/admin/audit?tenant=default")).json()) as {
      entries: { actor: string; action: string }[];
    };
    expect(
      entries.entries.some((e) => e.actor === "console:own@example.com" && e.action === "POST /tenants/:tenant/sites"),
    ).toBe(true);
  });

  it("ends the session on sign-out and when the user is removed", async () => {
    const client = await consoleSignIn(w.h, box, "own@example.com");
    await client.get("/console");
    expect((await client.post("/console/sign-out")).status).toBe(303);
    expect((await client.get("/console")).status).toBe(303);
    const again = await consoleSignIn(w.h, box, "vic@example.com");
    expect((await again.get("/console")).status).toBe(200);
    expect((await w.h.admin("DELETE", "/admin/tenants/default/console-users/vic%40example.com")).status).toBe(200);
    expect((await again.get("/console")).status).toBe(303);
    expect(
      (await w.h.admin("POST", "/admin/tenants/default/console-users", { email: "vic@example.com", role: "viewer" }))
        .status,
    ).toBe(200);
  });

  it.each([
    ["bad role", { email: "a@example.com", role: "root" }, 422],
    ["bad address", { email: "not an address", role: "admin" }, 422],
    ["NUL in address", { email: "a\u0000@example.com", role: "admin" }, 422],
    ["overlong address", { email: `${"a".repeat(300)}@example.com`, role: "admin" }, 422],
    ["no role", { email: "a@example.com" }, 422],
    ["array body", [], 422],
  ])("refuses a console user with %s", async (_name, body, status) => {
    const res = await w.h.admin("POST", "/admin/tenants/default/console-users", body);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBeTruthy();
  });

  it("answers 404 for an unknown tenant's console users", async () => {
    expect(
      (await w.h.admin("POST", "/admin/tenants/nope/console-users", { email: "a@example.com", role: "admin" })).status,
    ).toBe(404);
    expect((await w.h.admin("GET", "/admin/tenants/nope/console-users")).status).toBe(404);
  });

  it.each([
    ["a form in JSON", "application/json", "{}", 415],
    ["an unreadable multipart form", "multipart/form-data; boundary=x", "garbage", 400],
  ])("refuses %s with a page, not a 500", async (_name, type, body, status) => {
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    const res = await client.raw("POST", "/console/sites", undefined, {
      "content-type": type,
      "content-length": String(body.length),
    });
    // raw without a body: the length is a lie; the server must still answer cleanly.
    expect([status, 400, 403, 411]).toContain(res.status);
  });

  it("stages a document, shows its impact on sampled real requests, and publishes it", async () => {
    for (let i = 0; i < 4; i++) {
      const res = await w.h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
        body: { features: ["teaser"], deviceId: `impact-${i}` },
      });
      expect(res.status).toBe(200);
    }
    await new Promise((resolve) => setImmediate(resolve)); // samples are captured at setImmediate
    const client = await consoleSignIn(w.h, box, "ada@example.com");
    await client.get("/console/sites/news/documents");
    const changed = basicDocument() as { features: { teaser: { outcomes: { on: { fields: { size: string } } } } } };
    changed.features.teaser.outcomes.on.fields.size = "small";
    const staged = await client.post("/console/sites/news/documents", {
      op: "stage",
      document: JSON.stringify(changed),
    });
    expect(staged.status).toBe(201);
    const version = Number(staged.text.match(/Staged as version (\d+)/)?.[1]);
    const impact = await client.get("/console/sites/news/impact");
    expect(impact.status).toBe(200);
    const row = impact.text.match(/<tr><td>teaser<\/td><td>(\d+)<\/td><td>(\d+)<\/td>/);
    expect(row?.slice(1).map(Number)).toEqual([4, 4]);
    await client.get("/console/sites/news/documents");
    const published = await client.post(`/console/sites/news/documents/${version}/publish`);
    expect(published.text).toContain(`Version ${version} is live.`);
  });

  it("refuses bad document forms with a page and changes nothing", async () => {
    const admin = await consoleSignIn(w.h, box, "ada@example.com");
    const live = async () =>
      (
        (await (await w.h.admin("GET", "/admin/tenants/default/sites/news/documents")).json()) as {
          liveVersion: number;
        }
      ).liveVersion;
    const before = await live();
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents", { op: "stage", document: "{not json" })).status).toBe(
      422,
    );
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents", { op: "stage", document: "[]" })).status).toBe(422);
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents", { op: "explode", document: "{}" })).status).toBe(422);
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents/999/publish")).status).toBe(404);
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents/-1/publish")).status).toBe(404);
    expect((await admin.get("/console/sites/news/documents?version=abc")).status).toBe(404);
    expect((await admin.get("/console/sites/nosuch/documents")).status).toBe(404);
    await admin.get("/console/sites/news/documents");
    expect((await admin.post("/console/sites/news/documents/try", { body: '{"features": 5}' })).status).toBeOneOf([
      409, 422,
    ]);
    expect(await live()).toBe(before);
    const viewer = await consoleSignIn(w.h, box, "vic@example.com");
    const page = await viewer.get("/console/sites/news/documents");
    expect(page.text).not.toContain("Stage as preview");
    expect(
      (await viewer.post("/console/sites/news/documents", { op: "stage", document: JSON.stringify(basicDocument()) }))
        .status,
    ).toBe(403);
    expect((await viewer.post("/console/sites/news/documents/1/publish")).status).toBe(403);
    expect(await live()).toBe(before);
  });

  it("answers every signed-in form below 500 whatever its fields hold", async () => {
    const client = await consoleSignIn(w.h, box, "own@example.com");
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.constantFrom("", "\u0000", "\ud800", "x".repeat(5000), "[]", "{}", "null", "1e309", '{"features":["teaser"]}'),
    );
    const posts = [
      "/console/sites",
      "/console/sites/news/keys",
      "/console/sites/news/documents",
      "/console/sites/news/documents/try",
      "/console/sites/news/preview-token",
      "/console/sites/%00/keys",
      "/console/sites/news/documents/0/publish",
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...posts),
        fc.dictionary(fc.constantFrom("id", "name", "expiresInDays", "streaming", "document", "op", "body"), text),
        async (path, fields) => {
          await client.get("/console");
          const res = await client.post(path, fields);
          expect(res.status).toBeLessThan(500);
          // A NUL in the URL is refused by the app before any route (400 in the JSON envelope).
          if (path.includes("%00")) expect(res.status).toBe(400);
          else expect(res.headers.get("content-type")).toStartWith("text/html");
        },
      ),
      { numRuns: 60, seed: 26 },
    );
  });
});

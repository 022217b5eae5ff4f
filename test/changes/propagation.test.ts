import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { randomBytes } from "node:crypto";
import { SESSION_TTL_MS } from "../../src/identity/service";
import { hashSecret } from "../../src/keys/key-value";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { within } from "../helpers/second-process";
import { twoProcesses } from "../helpers/worlds";

/**
 * Two processes' worth of state over one store: process A takes operator actions, process B
 * serves requests and must see them within a second. On a server the second has its own
 * connections (LISTEN/NOTIFY); on the embedded store it shares the in-process database and
 * sees changes by polling the change log.
 */
describe.each(storeKinds)("changes reach every process within a second (%s store)", (kind) => {
  let key: string;
  let keyId: string;
  const w = twoProcesses(kind, async (a) => {
    ({ key, keyId } = await seedSite(a, "news", basicDocument()));
  });

  const decideOnB = (body: Record<string, unknown>, apiKey = key) =>
    w.b.request("POST", "/v1/decide", { headers: { "x-svc-site-id": "news", "x-api-key": apiKey }, body });

  it("serves a key issued in another process from its first request", async () => {
    const issued = await (await w.a.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "fresh" })).json();
    expect((await decideOnB({ features: [] }, issued.key)).status).toBe(200);
  });

  it("refuses a key revoked in another process within a second", async () => {
    expect((await decideOnB({ features: [] })).status).toBe(200);
    await w.a.admin("POST", `/admin/tenants/default/sites/news/keys/${keyId}/revoke`);
    await within(1000, async () => (await decideOnB({ features: [] })).status === 401);
    const issued = await (await w.a.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "next" })).json();
    key = issued.key;
  });

  it("swaps to a document deployed by another process within a second", async () => {
    const doc = basicDocument();
    (doc.features.section.outcomes.other as Record<string, unknown>) = { type: "redirect" };
    await w.a.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: doc });
    await within(1000, async () => {
      const answer = await (await decideOnB({ features: ["section"] })).json();
      return answer.decisions.section.type === "redirect";
    });
  });

  it("honours a grant added in another process within a second", async () => {
    const user = await (await w.a.admin("POST", "/admin/tenants/default/users", { email: "p@example.com" })).json();
    const userId = user.user.id;
    const before = await (await decideOnB({ features: ["paywall"], userId })).json();
    expect(before.decisions.paywall.outcome).not.toBe("free");
    await w.a.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" });
    await within(1000, async () => {
      const answer = await (await decideOnB({ features: ["paywall"], userId })).json();
      return answer.decisions.paywall.outcome === "free";
    });
  });
});

/** The basic site with a `country` trait and a feature that reads it. */
function traitsDocument() {
  const doc = basicDocument({ traits: { country: { type: "string" } } });
  (doc.features as Record<string, unknown>).edition = {
    purpose: "decision",
    outcomes: { uk: { type: "data", fields: { edition: "uk" } }, world: {} },
    rules: [{ when: { fact: "user.country", eq: "GB" }, then: "uk" }],
    default: "world",
    onError: "world",
  };
  return doc;
}

describe.each(storeKinds)("a reader's new traits reach decide in every process (%s store)", (kind) => {
  let key: string;
  const w = twoProcesses(kind, async (a) => {
    ({ key } = await seedSite(a, "news", traitsDocument()));
  });
  const edition = async (h: Harness, userId: string) => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { features: ["edition"], userId },
    });
    expect(res.status).toBe(200);
    return (await res.json()).decisions.edition.outcome as string;
  };

  it("drops the user's held facts in the process that took the change at once, and in another within a second", async () => {
    const identity = w.a.deps.identityDeps.identity;
    const user = await identity.findOrCreateByEmail("default", "traveller@example.com", true);
    const token = randomBytes(32).toString("base64url");
    await identity.createSession("default", user.id, hashSecret(token), new Date(w.a.clock.now() + SESSION_TTL_MS));
    // Both processes hold the user's facts (no country yet).
    expect(await edition(w.a, user.id)).toBe("world");
    expect(await edition(w.b, user.id)).toBe("world");
    const patched = await w.a.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "news", cookie: `svc.session_token=${token}` },
      body: { userTraits: { country: "GB" } },
    });
    expect(patched.status).toBe(200);
    expect((await patched.json()).userTraits).toEqual({ country: "GB" });
    expect(await edition(w.a, user.id)).toBe("uk");
    await within(1000, async () => (await edition(w.b, user.id)) === "uk");
    // And back: a removed trait is gone everywhere too.
    const cleared = await w.a.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "news", cookie: `svc.session_token=${token}` },
      body: { userTraits: { country: null } },
    });
    expect(cleared.status).toBe(200);
    expect(await edition(w.a, user.id)).toBe("world");
    await within(1000, async () => (await edition(w.b, user.id)) === "world");
  });
});

describe("tenants by Host", () => {
  let h: Harness;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db);
    await seedSite(h, "news", basicDocument());
    expect((await h.admin("POST", "/admin/tenants", { id: "acme", hosts: ["news.acme.example"] })).status).toBe(201);
    expect((await h.admin("POST", "/admin/tenants/acme/sites", { id: "news" })).status).toBe(201);
    const doc = basicDocument({
      identity: { mode: "dual", upstream: { signOutUrl: "https://login.acme.example/out" } },
    });
    expect((await h.admin("POST", "/admin/tenants/acme/sites/news/deploy", { document: doc })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const config = (host: string) =>
    h.app.handle(new Request(`http://${host}/v1/id/config`, { headers: { host, "x-svc-site-id": "news" } }));

  it("answers a configured host name with its tenant's site, port ignored", async () => {
    for (const host of ["news.acme.example", "NEWS.acme.example:8443"]) {
      const answer = await (await config(host)).json();
      expect(answer.identityMode).toBe("dual");
    }
  });

  it("answers every other host with the default tenant", async () => {
    expect((await (await config("localhost:3000")).json()).identityMode).toBe("svc_only");
  });

  it("refuses a key of one tenant on another tenant's host", async () => {
    const issued = await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "d" })).json();
    const res = await h.app.handle(
      new Request("http://news.acme.example/v1/decide", {
        method: "POST",
        headers: { "x-svc-site-id": "news", "x-api-key": issued.key, "content-type": "application/json" },
        body: JSON.stringify({ features: [] }),
      }),
    );
    expect(res.status).toBe(401);
  });

  it("refuses a tenant whose host already belongs to another, creating nothing", async () => {
    const res = await h.admin("POST", "/admin/tenants", { id: "copycat", hosts: ["news.acme.example"] });
    expect(res.status).toBe(409);
    const tenants = (await (await h.admin("GET", "/admin/tenants")).json()).tenants.map((t: { id: string }) => t.id);
    expect(tenants).not.toContain("copycat");
  });
});

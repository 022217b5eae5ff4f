import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const ORIGIN = "https://news.example";

const browserDocument = () => {
  const doc = basicDocument({
    identity: {
      mode: "dual",
      signInEnabled: true,
      upstream: { audience: "news-web", signOutUrl: "https://login.example/out", cookieNames: ["idp_token"] },
    },
  });
  (doc.features as Record<string, unknown>).subscribe = subscribeJourney();
  return doc;
};

describe("browser decide and forward mounts, with the access cookie", () => {
  let h: Harness;
  let idp: FakeIdp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    idp = await startFakeIdp();
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db);
    await seedSite(h, "news", browserDocument());
    await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await idp.stop();
    await drop();
  }, 60_000);

  /** A reader signed in through the exchange, optionally holding premium. */
  async function reader(sub: string, premium = false) {
    const credential = await idp.token(
      { sub, email: `${sub}@example.com`, email_verified: true },
      { nowMs: h.clock.now() },
    );
    const first = await h.request("POST", "/v1/id/session/exchange", {
      headers: { "x-svc-site-id": "news" },
      body: { subject_token: credential },
    });
    const userId = (await first.json()).user.id as string;
    if (premium) await h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" });
    // A fresh exchange mints an access cookie carrying the grants held now.
    const res = await h.request("POST", "/v1/id/session/exchange", {
      headers: { "x-svc-site-id": "news" },
      body: { subject_token: credential },
    });
    const cookies = res.headers.getSetCookie().map((c) => c.split(";")[0]);
    return {
      userId,
      cookie: cookies.join("; "),
      sessionOnly: cookies.find((c) => c?.startsWith("svc.session_token=")) as string,
    };
  }
  const decide = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h.request("POST", "/svc/v1/decide", { headers: { "x-svc-site-id": "news", origin: ORIGIN, ...headers }, body });

  it("answers a preflight for an allowed origin, and refuses others", async () => {
    const ok = await h.request("OPTIONS", "/svc/v1/decide", {
      headers: { origin: ORIGIN, "access-control-request-method": "POST" },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(ok.headers.get("access-control-allow-credentials")).toBe("true");
    expect(ok.headers.get("access-control-allow-headers")).toContain("x-svc-site-id");
    expect(ok.headers.get("access-control-allow-headers")).not.toContain("authorization");
    const bad = await h.request("OPTIONS", "/svc/v1/decide", { headers: { origin: "https://evil.example" } });
    expect(bad.status).toBe(403);
  });

  it("refuses a request from an origin the site does not allow, or with no origin", async () => {
    expect((await decide({ features: ["paywall"] }, { origin: "https://evil.example" })).status).toBe(403);
    const none = await h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news" },
      body: { features: [] },
    });
    expect(none.status).toBe(403);
  });

  it("decides for an anonymous reader with CORS headers for the origin", async () => {
    const res = await decide({ features: ["teaser"], deviceId: "browser-1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = await res.json();
    expect(body.decisions.teaser.outcome).toBe("on");
    expect(body.accessMissing).toBeUndefined();
  });

  it("answers a journey feature in decide without its destination (that belongs to forward)", async () => {
    const body = await (await decide({ features: ["subscribe"], deviceId: "browser-journey" })).json();
    expect(body.decisions.subscribe).toEqual({ outcome: "checkout" });
  });

  it("refuses an asserted userId with 403", async () => {
    const res = await decide({ features: ["paywall"], userId: "11111111-1111-4111-8111-111111111111" });
    expect(res.status).toBe(403);
  });

  it("refuses an API key with 401, never reading it as something else, before the body is checked", async () => {
    const key = (await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "server" })).json())
      .key as string;
    for (const credential of [
      { "x-api-key": key },
      { authorization: `Bearer ${key}` },
      { authorization: `bearer ${key}` },
    ] as Record<string, string>[]) {
      for (const body of [{ features: ["teaser"], deviceId: "keyed-browser" }, { features: "not-a-list" }]) {
        const res = await decide(body, credential);
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({
          error: {
            code: "unauthorized",
            message: "API keys are not accepted on this route; it takes the browser's signed access cookie.",
          },
        });
      }
      for (const mount of ["/v1", "/svc/v1"]) {
        const res = await h.request("GET", `${mount}/decide/forward?feature=subscribe&site=news`, {
          headers: credential,
        });
        expect(res.status).toBe(401);
        expect(res.headers.get("location")).toBeNull();
        expect((await res.json()).error.code).toBe("unauthorized");
      }
    }
  });

  it("refuses members of the wrong type with 422 instead of reading them as empty objects", async () => {
    for (const [body, path] of [
      [{ features: ["teaser"], content: "s" }, "/content"],
      [{ features: ["teaser"], content: [] }, "/content"],
      [{ features: ["teaser"], context: [] }, "/context"],
      [{ features: ["teaser"], context: 7 }, "/context"],
    ] as const) {
      const res = await decide(body);
      expect(res.status).toBe(422);
      expect(JSON.stringify((await res.json()).error.details)).toContain(path);
    }
    for (const raw of ["0", "[]", '"s"', "true", "null"]) {
      const res = await h.request("POST", "/svc/v1/decide", {
        headers: { "x-svc-site-id": "news", origin: ORIGIN },
        rawBody: raw,
      });
      expect(res.status).toBe(422);
      expect((await res.json()).error.code).toBe("validation_failed");
    }
  });

  it("reads grants from the access cookie", async () => {
    const r = await reader("sub-premium", true);
    const answer = await (await decide({ features: ["paywall"] }, { cookie: r.cookie })).json();
    expect(answer.decisions.paywall).toEqual({ outcome: "free", type: "allow" });
  });

  it("flags accessMissing and decides with no grants when only the session cookie is present", async () => {
    const r = await reader("sub-missing", true);
    const answer = await (
      await decide({ features: ["paywall"], deviceId: "d-missing" }, { cookie: r.sessionOnly })
    ).json();
    expect(answer.accessMissing).toBe(true);
    expect(answer.decisions.paywall.outcome).not.toBe("free");
  });

  it("ends a session revoked upstream within the access cookie's lifetime (15 minutes), and no later", async () => {
    const r = await reader("sub-revoked", true);
    const key = (await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "upstream" })).json())
      .key;
    const revoked = await h.request("POST", "/v1/id/upstream/revoke-sessions", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { subject: "sub-revoked", cause: "lock" },
    });
    expect((await revoked.json()).applied).toBe(true);
    // The refresh route sees it at once.
    const refreshed = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: r.cookie },
    });
    expect((await refreshed.json()).user).toBeNull();
    // The access cookie still speaks for the reader until it expires (the documented staleness)...
    h.clock.advance(14 * 60_000);
    expect(
      (await (await decide({ features: ["paywall"] }, { cookie: r.cookie })).json()).decisions.paywall.outcome,
    ).toBe("free");
    // ...and not one second past its 15 minutes.
    h.clock.advance(60_000 + 1_000);
    const after = await (await decide({ features: ["paywall"], deviceId: "d-revoked" }, { cookie: r.cookie })).json();
    expect(after.decisions.paywall.outcome).not.toBe("free");
    expect(after.accessMissing).toBe(true);
  });

  it("admits 200 per 10 seconds per client per site, then 429 with Retry-After", async () => {
    h.clock.set(Math.ceil(h.clock.now() / 10_000) * 10_000 + 1_000);
    const first = await decide({ features: [] });
    expect(first.status).toBe(200);
    // The IETF draft's fields: the policy (200 per 10 s) and what is left, resetting in 9 s.
    expect(first.headers.get("ratelimit-policy")).toBe('"browser-decide";q=200;w=10');
    expect(first.headers.get("ratelimit")).toBe('"browser-decide";r=199;t=9');
    for (let i = 1; i < 200; i++) expect((await decide({ features: [] })).status).toBe(200);
    const refused = await decide({ features: [] });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("9");
    expect(refused.headers.get("ratelimit")).toBe('"browser-decide";r=0;t=9');
    expect(refused.headers.get("ratelimit-policy")).toBe('"browser-decide";q=200;w=10');
    h.clock.advance(9_000);
    expect((await decide({ features: [] })).status).toBe(200);
  });

  describe.each(["/v1", "/svc/v1"])("GET %s/decide/forward", (mount) => {
    const forward = (query: string, headers: Record<string, string> = {}) =>
      h.request("GET", `${mount}/decide/forward?${query}`, { headers });

    it("redirects to the resolved url, filling placeholders from the query", async () => {
      const res = await forward("feature=subscribe&site=news&offer=annual plan");
      expect(res.status).toBe(302);
      expect(res.headers.get("ratelimit-policy")).toBe('"forward";q=200;w=10');
      expect(res.headers.get("ratelimit")).toMatch(/^"forward";r=\d+;t=\d+$/);
      expect(res.headers.get("location")).toBe("https://shop.example/checkout?offer=annual%20plan");
      expect(await res.text()).toBe("");
    });

    it("redirects to the fallback when the url does not resolve", async () => {
      const res = await forward("feature=subscribe&site=news");
      expect(res.headers.get("location")).toBe("https://news.example/subscribe");
    });

    it("routes by the access cookie's grants", async () => {
      const r = await reader(`sub-forward-${mount.length}`, true);
      const res = await forward("feature=subscribe&site=news", { cookie: r.cookie });
      expect(res.headers.get("location")).toBe("https://news.example/account");
    });

    it("lets the header win over the site query parameter", async () => {
      const res = await forward("feature=subscribe&site=elsewhere", { "x-svc-site-id": "news" });
      expect(res.status).toBe(302);
    });

    it("refuses a missing site (400), a missing feature (422), a non-journey feature (404) and a userId (403)", async () => {
      expect((await forward("feature=subscribe")).status).toBe(400);
      expect((await forward("site=news")).status).toBe(422);
      expect((await forward("feature=paywall&site=news")).status).toBe(404);
      expect((await forward("feature=ghost&site=news")).status).toBe(404);
      expect((await forward("feature=subscribe&site=news&userId=u1")).status).toBe(403);
    });
  });
});

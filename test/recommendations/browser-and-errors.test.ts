import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeRecombee } from "../helpers/fake-recombee";
import { type Harness, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";
import { browser, DATABASE_ID, ENGINE_TOKEN, keyed, ORIGIN, type Reply, recommendationWorld } from "./fixture";

describe.each(storeKinds)("recommendations: the browser mount and every status (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let engine: FakeRecombee;
  let key: string;
  let wireKey: string;
  const box = mailbox();
  let n = 0;
  const fresh = (query = "") => `?userId=reader-${++n}${query}`;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { config: { SVC_RECOMMENDATION_TIMEOUT_MS: "300" }, mailTransport: box.transport });
    ({ engine, key, wireKey } = await recommendationWorld(h));
  }, 60_000);
  afterAll(async () => {
    engine.stop();
    await h.stop();
    await db.drop();
  }, 60_000);
  beforeEach(() => {
    engine.state.mode = "ok";
  });

  it("browser: the signed-in user is the subject, with CORS for the site's origin, and is never cached", async () => {
    const reader = await signIn(h, box, "reader@example.com");
    const first = await browser(h, "?domainUserId=device-1&count=2", { cookie: reader.cookie });
    expect(first.status).toBe(200);
    expect(first.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(first.headers.get("access-control-allow-credentials")).toBe("true");
    expect(first.headers.get("vary")).toContain("Origin");
    expect(engine.calls.at(-1)?.userId).toBe(reader.userId);
    const reply = (await first.json()) as Reply;
    expect(reply.items.map((i) => i.id)).toEqual(["3", "1"]);
    const calls = engine.calls.length;
    await browser(h, "?domainUserId=device-1&count=2", { cookie: reader.cookie });
    expect(engine.calls.length).toBe(calls + 1);
  });

  it("browser: a signed-out reader is their domainUserId; with neither the answer is empty and no call", async () => {
    await browser(h, "?domainUserId=device-2");
    expect(engine.calls.at(-1)?.userId).toBe("device-2");
    const calls = engine.calls.length;
    const res = await browser(h, "?count=3");
    expect(await res.json()).toEqual({ recommId: null, items: [] });
    expect(engine.calls.length).toBe(calls);
  });

  it("browser: at an external_only site the subject is the domainUserId even with a session", async () => {
    const reader = await signIn(h, box, "wire-reader@example.com");
    await browser(h, "?domainUserId=device-3", { cookie: reader.cookie }, "wire");
    expect(engine.calls.at(-1)?.userId).toBe("device-3");
    void wireKey;
  });

  it("browser: answers a preflight, and refuses another origin (403), userId (400), a key (401), no site (400)", async () => {
    const preflight = await h.request("OPTIONS", "/svc/v1/recommendations", {
      headers: { origin: ORIGIN, "x-svc-site-id": "news", "access-control-request-method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const calls = engine.calls.length;
    expect((await browser(h, "?domainUserId=d", { origin: "https://evil.example" })).status).toBe(403);
    const withUser = await browser(h, "?userId=someone");
    expect(withUser.status).toBe(400);
    expect((await browser(h, "?domainUserId=d", { "x-api-key": key })).status).toBe(401);
    const noSite = await h.request("GET", "/svc/v1/recommendations?domainUserId=d", { headers: { origin: ORIGIN } });
    expect(noSite.status).toBe(400);
    expect(engine.calls.length).toBe(calls);
  });

  it("keyed: 401 without a key, 403 for a site header naming another site", async () => {
    expect((await h.request("GET", "/v1/recommendations?userId=u")).status).toBe(401);
    expect((await keyed(h, key, "?userId=u", { "x-svc-site-id": "wire" })).status).toBe(403);
  });

  it("answers 422 for a scenario the engine does not know", async () => {
    const res = await keyed(h, key, fresh("&scenario=no-such-scenario"));
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: "validation_failed", message: "Unknown scenario." });
  });

  it.each([
    ["slow past the timeout", "slow"],
    ["down", "down"],
    ["answering something that is not JSON", "wrong"],
  ] as const)("answers 503 with Retry-After when the engine is %s, on both mounts", async (_, mode) => {
    engine.state.mode = mode;
    engine.state.slowMs = 1_500;
    for (const res of [await keyed(h, key, fresh()), await browser(h, `?domainUserId=dev-${++n}`)]) {
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
    }
  });

  it("answers 503 without Retry-After when the engine refuses the signature (wrong token)", async () => {
    await h.admin("PUT", "/admin/tenants/default/services/recombee", {
      databaseId: DATABASE_ID,
      token: "not-the-token",
      baseUri: engine.baseUri,
    });
    try {
      const rejected = engine.state.rejectedSignatures;
      const res = await keyed(h, key, fresh());
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      expect(engine.state.rejectedSignatures).toBe(rejected + 1);
    } finally {
      await h.admin("PUT", "/admin/tenants/default/services/recombee", {
        databaseId: DATABASE_ID,
        token: ENGINE_TOKEN,
        baseUri: engine.baseUri,
      });
    }
  });

  it("answers 503 without Retry-After when no engine is configured, on both mounts", async () => {
    await h.admin("DELETE", "/admin/tenants/default/services/recombee");
    try {
      for (const res of [await keyed(h, key, fresh()), await browser(h, "?domainUserId=dev-x")]) {
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBeNull();
      }
      // No subject: still the empty answer, engine or not.
      expect((await keyed(h, key, "?count=2&edition=x")).status).toBe(200);
    } finally {
      await h.admin("PUT", "/admin/tenants/default/services/recombee", {
        databaseId: DATABASE_ID,
        token: ENGINE_TOKEN,
        baseUri: engine.baseUri,
      });
    }
  });

  it("answers 404 when the key's site is no longer served", async () => {
    expect((await h.admin("POST", "/admin/tenants/default/sites/wire/disable")).status).toBeLessThan(300);
    try {
      expect((await keyed(h, wireKey, "?userId=u")).status).toBe(404);
    } finally {
      await h.admin("POST", "/admin/tenants/default/sites/wire/enable");
    }
  });
});

import { describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { mailbox, signIn } from "../helpers/sign-in";
import { browser, DATABASE_ID, ENGINE_TOKEN, keyed, ORIGIN, type Reply, recommendationSuiteWorld } from "./fixture";

describe.each(storeKinds)("recommendations: the browser mount and every status (%s store)", (kind) => {
  const box = mailbox();
  const w = recommendationSuiteWorld(kind, box.transport);
  let n = 0;
  const fresh = (query = "") => `?userId=reader-${++n}${query}`;

  it("browser: the signed-in user is the subject, with CORS for the site's origin, and is never cached", async () => {
    const reader = await signIn(w.h, box, "reader@example.com");
    const first = await browser(w.h, "?domainUserId=device-1&count=2", { cookie: reader.cookie });
    expect(first.status).toBe(200);
    expect(first.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(first.headers.get("access-control-allow-credentials")).toBe("true");
    expect(first.headers.get("vary")).toContain("Origin");
    expect(w.engine.calls.at(-1)?.userId).toBe(reader.userId);
    const reply = (await first.json()) as Reply;
    expect(reply.items.map((i) => i.id)).toEqual(["3", "1"]);
    const calls = w.engine.calls.length;
    await browser(w.h, "?domainUserId=device-1&count=2", { cookie: reader.cookie });
    expect(w.engine.calls.length).toBe(calls + 1);
  });

  it("browser: a signed-out reader is their domainUserId; with neither the answer is empty and no call", async () => {
    await browser(w.h, "?domainUserId=device-2");
    expect(w.engine.calls.at(-1)?.userId).toBe("device-2");
    const calls = w.engine.calls.length;
    const res = await browser(w.h, "?count=3");
    expect(await res.json()).toEqual({ recommId: null, items: [] });
    expect(w.engine.calls.length).toBe(calls);
  });

  it("browser: at an external_only site the subject is the domainUserId even with a session", async () => {
    const reader = await signIn(w.h, box, "wire-reader@example.com");
    await browser(w.h, "?domainUserId=device-3", { cookie: reader.cookie }, "wire");
    expect(w.engine.calls.at(-1)?.userId).toBe("device-3");
    void w.wireKey;
  });

  it("browser: answers a preflight, and refuses another origin (403), userId (400), a key (401), no site (400)", async () => {
    const preflight = await w.h.request("OPTIONS", "/svc/v1/recommendations", {
      headers: { origin: ORIGIN, "x-svc-site-id": "news", "access-control-request-method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const calls = w.engine.calls.length;
    expect((await browser(w.h, "?domainUserId=d", { origin: "https://evil.example" })).status).toBe(403);
    const withUser = await browser(w.h, "?userId=someone");
    expect(withUser.status).toBe(400);
    expect((await browser(w.h, "?domainUserId=d", { "x-api-key": w.key })).status).toBe(401);
    const noSite = await w.h.request("GET", "/svc/v1/recommendations?domainUserId=d", { headers: { origin: ORIGIN } });
    expect(noSite.status).toBe(400);
    expect(w.engine.calls.length).toBe(calls);
  });

  it("keyed: 401 without a key, 403 for a site header naming another site", async () => {
    expect((await w.h.request("GET", "/v1/recommendations?userId=u")).status).toBe(401);
    expect((await keyed(w.h, w.key, "?userId=u", { "x-svc-site-id": "wire" })).status).toBe(403);
  });

  it("answers 422 for a scenario the engine does not know", async () => {
    const res = await keyed(w.h, w.key, fresh("&scenario=no-such-scenario"));
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: "validation_failed", message: "Unknown scenario." });
  });

  it.each([
    ["slow past the timeout", "slow"],
    ["down", "down"],
    ["answering something that is not JSON", "wrong"],
  ] as const)("answers 503 with Retry-After when the engine is %s, on both mounts", async (_, mode) => {
    w.engine.state.mode = mode;
    w.engine.state.slowMs = 1_500;
    for (const res of [await keyed(w.h, w.key, fresh()), await browser(w.h, `?domainUserId=dev-${++n}`)]) {
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
    }
  });

  it("answers 503 without Retry-After when the engine refuses the signature (wrong token)", async () => {
    await w.h.admin("PUT", "/admin/tenants/default/services/recombee", {
      databaseId: DATABASE_ID,
      token: "not-the-token",
      baseUri: w.engine.baseUri,
    });
    try {
      const rejected = w.engine.state.rejectedSignatures;
      const res = await keyed(w.h, w.key, fresh());
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      expect(w.engine.state.rejectedSignatures).toBe(rejected + 1);
    } finally {
      await w.h.admin("PUT", "/admin/tenants/default/services/recombee", {
        databaseId: DATABASE_ID,
        token: ENGINE_TOKEN,
        baseUri: w.engine.baseUri,
      });
    }
  });

  it("answers 503 without Retry-After when no engine is configured, on both mounts", async () => {
    await w.h.admin("DELETE", "/admin/tenants/default/services/recombee");
    try {
      for (const res of [await keyed(w.h, w.key, fresh()), await browser(w.h, "?domainUserId=dev-x")]) {
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBeNull();
      }
      // No subject: still the empty answer, engine or not.
      expect((await keyed(w.h, w.key, "?count=2&edition=x")).status).toBe(200);
    } finally {
      await w.h.admin("PUT", "/admin/tenants/default/services/recombee", {
        databaseId: DATABASE_ID,
        token: ENGINE_TOKEN,
        baseUri: w.engine.baseUri,
      });
    }
  });

  it("answers 404 when the key's site is no longer served", async () => {
    expect((await w.h.admin("POST", "/admin/tenants/default/sites/wire/disable")).status).toBeLessThan(300);
    try {
      expect((await keyed(w.h, w.wireKey, "?userId=u")).status).toBe(404);
    } finally {
      await w.h.admin("POST", "/admin/tenants/default/sites/wire/enable");
    }
  });
});

import { beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { articleStory } from "../helpers/fake-storyblok";
import { seedSite, startHarness } from "../helpers/harness";
import { contentWorld, drain, itemOf, statsOf, sync } from "./fixture";

describe.each(storeKinds)("content sync: bad bodies, CMS failures and restarts (%s store)", (kind) => {
  const w = contentWorld(kind, { SVC_CMS_TIMEOUT_MS: "300" });
  beforeEach(() => {
    w.cms.state.mode = "ok";
  });

  it("answers 422 with the failing path for a body without events, an event without id, or over 1,000 events", async () => {
    const cases: [unknown, string][] = [
      [{}, "/events"],
      [{ events: [{ type: "story" }] }, "/events/0/id"],
      [{ events: [{ id: "" }] }, "/events/0/id"],
      [{ events: [{ id: 7 }] }, "/events/0/id"],
      [{ events: [{ id: "1", type: "" }] }, "/events/0/type"],
      [{ events: Array.from({ length: 1001 }, (_, i) => ({ id: String(i) })) }, "/events"],
      [{ events: "101" }, "/events"],
      [[], "/"],
    ];
    for (const [body, path] of cases) {
      const res = await sync(w.h, w.key, body);
      expect([res.status, path]).toEqual([422, path]);
      const reply = (await res.json()) as { error: { code: string; details: { path: string }[] } };
      expect(reply.error.code).toBe("validation_failed");
      expect(reply.error.details.map((d) => d.path)).toContain(path);
    }
    expect((await statsOf(w.h)).queue.depth).toBe(0);
  });

  it("drops members it does not know (the app's rule for every body): a notice never carries content", async () => {
    const res = await sync(w.h, w.key, {
      events: [{ id: "x-unknown", type: "asset", body: "<p>content</p>" }],
      extra: 1,
    });
    expect(res.status).toBe(200);
  });

  it("accepts exactly 1,000 events", async () => {
    const res = await sync(w.h, w.key, {
      events: Array.from({ length: 1000 }, (_, i) => ({ id: `bulk-${i}`, type: "tag" })),
    });
    expect(res.status).toBe(200);
  });

  it("answers 400 for malformed JSON", async () => {
    const res = await w.h.request("POST", "/v1/content/sync", {
      headers: { "x-svc-site-id": "news", "x-api-key": w.key },
      rawBody: '{"events": [',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("bad_request");
  });

  it("retries a read the CMS rate-limits no sooner than its Retry-After, then stores the story", async () => {
    w.cms.stories.set("201", articleStory(201));
    w.cms.state.mode = "rate-limited";
    w.cms.state.retryAfter = 30;
    await sync(w.h, w.key, { events: [{ id: "201" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    const limited = w.cms.readsOf("201");
    // The client's own single immediate retry, then ours.
    expect(limited).toBeGreaterThanOrEqual(1);
    expect(await itemOf(w.h, "201")).toBe(404);
    w.cms.state.mode = "ok";
    w.h.clock.advance(29_000);
    await drain(w.h);
    expect(w.cms.readsOf("201")).toBe(limited);
    w.h.clock.advance(1_000);
    await drain(w.h);
    expect(await itemOf(w.h, "201")).toMatchObject({ headline: "Headline 201" });
  });

  it("retries with growing backoff while the CMS is down, keeping the read owed and visible", async () => {
    w.cms.stories.set("202", articleStory(202));
    w.cms.state.mode = "down";
    await sync(w.h, w.key, { events: [{ id: "202" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.readsOf("202")).toBe(1);
    const owed = await statsOf(w.h);
    expect(owed.queue.depth).toBe(1);
    expect(owed.queue.oldest).not.toBeNull();
    w.h.clock.advance(5_000); // first backoff: 5 s
    await drain(w.h);
    expect(w.cms.readsOf("202")).toBe(2);
    w.h.clock.advance(5_000); // second backoff is 10 s: not yet
    await drain(w.h);
    expect(w.cms.readsOf("202")).toBe(2);
    w.cms.state.mode = "ok";
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.readsOf("202")).toBe(3);
    expect(await itemOf(w.h, "202")).toMatchObject({ headline: "Headline 202" });
    expect((await statsOf(w.h)).queue.depth).toBe(0);
  });

  it("gives up a read that times out every time, then holds it dead for operators", async () => {
    w.cms.stories.set("203", articleStory(203));
    w.cms.state.mode = "slow";
    w.cms.state.slowMs = 1_500;
    await sync(w.h, w.key, { events: [{ id: "203" }] });
    w.h.clock.advance(5_000);
    for (let attempt = 0; attempt < 8; attempt++) {
      await drain(w.h);
      w.h.clock.advance(15 * 60_000);
    }
    expect(w.cms.readsOf("203")).toBe(8);
    const stats = await statsOf(w.h);
    expect(stats.queue.dead).toBe(1);
    expect(await itemOf(w.h, "203")).toBe(404);
    // A fresh notice revives it.
    w.cms.state.mode = "ok";
    await sync(w.h, w.key, { events: [{ id: "203" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(await itemOf(w.h, "203")).toMatchObject({ headline: "Headline 203" });
    expect((await statsOf(w.h)).queue.dead).toBe(0);
  }, 30_000);

  it("keeps the read owed across a restart of the server", async () => {
    w.cms.stories.set("204", articleStory(204));
    await sync(w.h, w.key, { events: [{ id: "204" }] });
    const at = w.h.clock.now();
    await w.h.stop();
    w.h = await startHarness(w.db, { config: { SVC_CMS_TIMEOUT_MS: "300" } });
    w.h.clock.set(at);
    expect((await statsOf(w.h)).queue.depth).toBe(1);
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(await itemOf(w.h, "204")).toMatchObject({ headline: "Headline 204" });
  });

  it("answers 503 without Retry-After when the tenant has no CMS, and enqueues nothing", async () => {
    const res0 = await w.h.admin("DELETE", "/admin/tenants/default/services/storyblok");
    expect(res0.status).toBe(200);
    const owed = (await statsOf(w.h)).queue.depth;
    try {
      const res = await sync(w.h, w.key, { events: [{ id: "205" }] });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
      // Nothing to read: still a success.
      expect((await sync(w.h, w.key, { events: [{ id: "205", type: "asset" }] })).status).toBe(200);
      expect((await statsOf(w.h)).queue.depth).toBe(owed);
    } finally {
      await w.h.admin("PUT", "/admin/tenants/default/services/storyblok", {
        token: "storyblok-public-token",
        endpoint: w.cms.endpoint,
      });
    }
  });
});

describe.each(storeKinds)("content sync: credentials (%s store)", (kind) => {
  const w = contentWorld(kind);
  let otherKey: string;

  beforeAll(async () => {
    ({ key: otherKey } = await seedSite(w.h, "sports", basicDocument()));
  }, 60_000);

  it("answers 400 without the site header (the spec's common rule), even with the key's own site implied", async () => {
    const res = await w.h.request("POST", "/v1/content/sync", {
      headers: { "x-api-key": w.key },
      body: { events: [{ id: "1" }] },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("bad_request");
    await drain(w.h);
    expect(await itemOf(w.h, "1", "news")).toBe(404);
  });

  it("answers 401 without a key or with an unknown one, before reading the body", async () => {
    const none = await w.h.request("POST", "/v1/content/sync", {
      headers: { "x-svc-site-id": "news" },
      body: { nonsense: true },
    });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { message: string } }).error.message).toBe("Missing API key.");
    const bad = await sync(w.h, "svc_not_a_key", { events: [] });
    expect(bad.status).toBe(401);
  });

  it("answers 403 when the site header names another site than the key's", async () => {
    const res = await sync(w.h, otherKey, { events: [{ id: "1" }] }, { "x-svc-site-id": "news" });
    expect(res.status).toBe(403);
  });

  it("files a notice under the key's own site only", async () => {
    w.cms.stories.set("301", articleStory(301));
    await sync(w.h, otherKey, { events: [{ id: "301" }] }, { "x-svc-site-id": "sports" });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(await itemOf(w.h, "301", "sports")).toMatchObject({ id: "301" });
    expect(await itemOf(w.h, "301", "news")).toBe(404);
    void w.key;
  });
});

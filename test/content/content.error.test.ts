import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { articleStory, type FakeStoryblok } from "../helpers/fake-storyblok";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { contentSite, drain, itemOf, statsOf, sync } from "./fixture";

describe.each(storeKinds)("content sync: bad bodies, CMS failures and restarts (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let cms: FakeStoryblok;
  let key: string;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { config: { SVC_CMS_TIMEOUT_MS: "300" } });
    ({ cms, key } = await contentSite(h));
  }, 60_000);
  afterAll(async () => {
    cms.stop();
    await h.stop();
    await db.drop();
  }, 60_000);
  beforeEach(() => {
    cms.state.mode = "ok";
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
      const res = await sync(h, key, body);
      expect([res.status, path]).toEqual([422, path]);
      const reply = (await res.json()) as { error: { code: string; details: { path: string }[] } };
      expect(reply.error.code).toBe("validation_failed");
      expect(reply.error.details.map((d) => d.path)).toContain(path);
    }
    expect((await statsOf(h)).queue.depth).toBe(0);
  });

  it("drops members it does not know (the app's rule for every body): a notice never carries content", async () => {
    const res = await sync(h, key, { events: [{ id: "x-unknown", type: "asset", body: "<p>content</p>" }], extra: 1 });
    expect(res.status).toBe(200);
  });

  it("accepts exactly 1,000 events", async () => {
    const res = await sync(h, key, {
      events: Array.from({ length: 1000 }, (_, i) => ({ id: `bulk-${i}`, type: "tag" })),
    });
    expect(res.status).toBe(200);
  });

  it("answers 400 for malformed JSON", async () => {
    const res = await h.request("POST", "/v1/content/sync", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      rawBody: '{"events": [',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("bad_request");
  });

  it("retries a read the CMS rate-limits no sooner than its Retry-After, then stores the story", async () => {
    cms.stories.set("201", articleStory(201));
    cms.state.mode = "rate-limited";
    cms.state.retryAfter = 30;
    await sync(h, key, { events: [{ id: "201" }] });
    h.clock.advance(5_000);
    await drain(h);
    const limited = cms.readsOf("201");
    // The client's own single immediate retry, then ours.
    expect(limited).toBeGreaterThanOrEqual(1);
    expect(await itemOf(h, "201")).toBe(404);
    cms.state.mode = "ok";
    h.clock.advance(29_000);
    await drain(h);
    expect(cms.readsOf("201")).toBe(limited);
    h.clock.advance(1_000);
    await drain(h);
    expect(await itemOf(h, "201")).toMatchObject({ headline: "Headline 201" });
  });

  it("retries with growing backoff while the CMS is down, keeping the read owed and visible", async () => {
    cms.stories.set("202", articleStory(202));
    cms.state.mode = "down";
    await sync(h, key, { events: [{ id: "202" }] });
    h.clock.advance(5_000);
    await drain(h);
    expect(cms.readsOf("202")).toBe(1);
    const owed = await statsOf(h);
    expect(owed.queue.depth).toBe(1);
    expect(owed.queue.oldest).not.toBeNull();
    h.clock.advance(5_000); // first backoff: 5 s
    await drain(h);
    expect(cms.readsOf("202")).toBe(2);
    h.clock.advance(5_000); // second backoff is 10 s: not yet
    await drain(h);
    expect(cms.readsOf("202")).toBe(2);
    cms.state.mode = "ok";
    h.clock.advance(5_000);
    await drain(h);
    expect(cms.readsOf("202")).toBe(3);
    expect(await itemOf(h, "202")).toMatchObject({ headline: "Headline 202" });
    expect((await statsOf(h)).queue.depth).toBe(0);
  });

  it("gives up a read that times out every time, then holds it dead for operators", async () => {
    cms.stories.set("203", articleStory(203));
    cms.state.mode = "slow";
    cms.state.slowMs = 1_500;
    await sync(h, key, { events: [{ id: "203" }] });
    h.clock.advance(5_000);
    for (let attempt = 0; attempt < 8; attempt++) {
      await drain(h);
      h.clock.advance(15 * 60_000);
    }
    expect(cms.readsOf("203")).toBe(8);
    const stats = await statsOf(h);
    expect(stats.queue.dead).toBe(1);
    expect(await itemOf(h, "203")).toBe(404);
    // A fresh notice revives it.
    cms.state.mode = "ok";
    await sync(h, key, { events: [{ id: "203" }] });
    h.clock.advance(5_000);
    await drain(h);
    expect(await itemOf(h, "203")).toMatchObject({ headline: "Headline 203" });
    expect((await statsOf(h)).queue.dead).toBe(0);
  }, 30_000);

  it("keeps the read owed across a restart of the server", async () => {
    cms.stories.set("204", articleStory(204));
    await sync(h, key, { events: [{ id: "204" }] });
    const at = h.clock.now();
    await h.stop();
    h = await startHarness(db, { config: { SVC_CMS_TIMEOUT_MS: "300" } });
    h.clock.set(at);
    expect((await statsOf(h)).queue.depth).toBe(1);
    h.clock.advance(5_000);
    await drain(h);
    expect(await itemOf(h, "204")).toMatchObject({ headline: "Headline 204" });
  });

  it("answers 503 without Retry-After when the tenant has no CMS, and enqueues nothing", async () => {
    const res0 = await h.admin("DELETE", "/admin/tenants/default/services/storyblok");
    expect(res0.status).toBe(200);
    const owed = (await statsOf(h)).queue.depth;
    try {
      const res = await sync(h, key, { events: [{ id: "205" }] });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
      // Nothing to read: still a success.
      expect((await sync(h, key, { events: [{ id: "205", type: "asset" }] })).status).toBe(200);
      expect((await statsOf(h)).queue.depth).toBe(owed);
    } finally {
      await h.admin("PUT", "/admin/tenants/default/services/storyblok", {
        token: "storyblok-public-token",
        endpoint: cms.endpoint,
      });
    }
  });
});

describe.each(storeKinds)("content sync: credentials (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let cms: FakeStoryblok;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db);
    ({ cms, key } = await contentSite(h));
    ({ key: otherKey } = await seedSite(h, "sports", basicDocument()));
  }, 60_000);
  afterAll(async () => {
    cms.stop();
    await h.stop();
    await db.drop();
  }, 60_000);

  it("answers 400 without the site header (the spec's common rule), even with the key's own site implied", async () => {
    const res = await h.request("POST", "/v1/content/sync", {
      headers: { "x-api-key": key },
      body: { events: [{ id: "1" }] },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("bad_request");
    await drain(h);
    expect(await itemOf(h, "1", "news")).toBe(404);
  });

  it("answers 401 without a key or with an unknown one, before reading the body", async () => {
    const none = await h.request("POST", "/v1/content/sync", {
      headers: { "x-svc-site-id": "news" },
      body: { nonsense: true },
    });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { message: string } }).error.message).toBe("Missing API key.");
    const bad = await sync(h, "svc_not_a_key", { events: [] });
    expect(bad.status).toBe(401);
  });

  it("answers 403 when the site header names another site than the key's", async () => {
    const res = await sync(h, otherKey, { events: [{ id: "1" }] }, { "x-svc-site-id": "news" });
    expect(res.status).toBe(403);
  });

  it("files a notice under the key's own site only", async () => {
    cms.stories.set("301", articleStory(301));
    await sync(h, otherKey, { events: [{ id: "301" }] }, { "x-svc-site-id": "sports" });
    h.clock.advance(5_000);
    await drain(h);
    expect(await itemOf(h, "301", "sports")).toMatchObject({ id: "301" });
    expect(await itemOf(h, "301", "news")).toBe(404);
    void key;
  });
});

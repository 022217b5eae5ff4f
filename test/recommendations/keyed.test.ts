import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeRecombee } from "../helpers/fake-recombee";
import { type Harness, startHarness } from "../helpers/harness";
import { keyed, type Reply, recommendationWorld } from "./fixture";

describe.each(storeKinds)("GET /v1/recommendations (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let engine: FakeRecombee;
  let key: string;
  let n = 0;
  /** A URL no earlier test asked for (the cache is per full URL). */
  const fresh = (query = "") => `?userId=reader-${++n}${query}`;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { config: { SVC_RECOMMENDATION_TIMEOUT_MS: "300" } });
    ({ engine, key } = await recommendationWorld(h));
  }, 60_000);
  afterAll(async () => {
    engine.stop();
    await h.stop();
    await db.drop();
  }, 60_000);
  beforeEach(() => {
    engine.state.mode = "ok";
  });

  it("answers the site's live items best first, hydrated from the content store, with recomm_id on every url", async () => {
    const res = await keyed(h, key, fresh("&count=4&scenario=homepage"));
    expect(res.status).toBe(200);
    const reply = (await res.json()) as Reply;
    expect(reply.recommId).toMatch(/^recomm-\d+$/);
    // 9 is deleted and 10 is another site's: left out, the order kept.
    expect(reply.items.map((i) => i.id)).toEqual(["3", "1", "2", "4"]);
    expect(reply.items[0]).toEqual({
      id: "3",
      headline: "Headline 3",
      description: "Teaser 3",
      image: "https://img.example/3.jpg",
      url: `https://news.example/story-3?recomm_id=${reply.recommId}`,
      publishedAt: "2026-11-20T08:00:00.000Z",
    });
    const call = engine.calls.at(-1)!;
    expect(call).toMatchObject({ kind: "user", userId: `reader-${n}` });
    expect(call.body).toMatchObject({ count: 8, scenario: "homepage", cascadeCreate: true });
  });

  it("answers 5 items by default and at most count", async () => {
    const reply = (await (await keyed(h, key, fresh())).json()) as Reply;
    expect(reply.items.length).toBe(5);
    const one = (await (await keyed(h, key, fresh("&count=1"))).json()) as Reply;
    expect(one.items.map((i) => i.id)).toEqual(["3"]);
  });

  it("uses domainUserId when there is no userId, and with neither answers empty without calling the engine", async () => {
    await keyed(h, key, "?domainUserId=device-abc");
    expect(engine.calls.at(-1)?.userId).toBe("device-abc");
    const before = engine.calls.length;
    const res = await keyed(h, key, "?edition=2026-11-21&count=3");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recommId: null, items: [] });
    expect(engine.calls.length).toBe(before);
  });

  it("asks item-to-item for the item being read, and answers empty for an item the engine does not know", async () => {
    const reply = (await (await keyed(h, key, fresh("&itemId=3&scenario=read-next"))).json()) as Reply;
    expect(engine.calls.at(-1)).toMatchObject({ kind: "item", itemId: "3", userId: `reader-${n}` });
    expect(reply.items.map((i) => i.id)).not.toContain("3");
    const unknown = await keyed(h, key, fresh("&itemId=999"));
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual({ recommId: null, items: [] });
  });

  it("caches an answer 15 minutes per key, site and full URL: one edition shares one recommId", async () => {
    const query = fresh("&edition=morning");
    const first = (await (await keyed(h, key, query)).json()) as Reply;
    const calls = engine.calls.length;
    const again = (await (await keyed(h, key, query)).json()) as Reply;
    expect(again).toEqual(first);
    expect(engine.calls.length).toBe(calls);
    // Another edition is another URL.
    await keyed(h, key, query.replace("morning", "evening"));
    expect(engine.calls.length).toBe(calls + 1);
    // Kept while its age is at most 15 minutes (lru-cache's ttl), asked again past them.
    h.clock.advance(15 * 60_000);
    await keyed(h, key, query);
    expect(engine.calls.length).toBe(calls + 1);
    h.clock.advance(1);
    const later = (await (await keyed(h, key, query)).json()) as Reply;
    expect(engine.calls.length).toBe(calls + 2);
    expect(later.recommId).not.toBe(first.recommId);
  });

  it("makes one engine call for 1,000 concurrent identical requests", async () => {
    engine.state.mode = "slow";
    engine.state.slowMs = 100;
    const query = fresh();
    const before = engine.calls.length;
    const replies = await Promise.all(Array.from({ length: 1000 }, () => keyed(h, key, query)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const ids = new Set(await Promise.all(replies.map(async (r) => ((await r.json()) as Reply).recommId)));
    expect(ids.size).toBe(1);
    expect(engine.calls.length).toBe(before + 1);
  }, 30_000);

  it("never caches an error: the next identical request calls the engine again", async () => {
    const query = fresh();
    engine.state.mode = "down";
    const failed = await keyed(h, key, query);
    expect(failed.status).toBe(503);
    const before = engine.calls.length;
    engine.state.mode = "ok";
    const res = await keyed(h, key, query);
    expect(res.status).toBe(200);
    expect(engine.calls.length).toBe(before + 1);
  });

  it("counts every engine call against the tenant's quota, failed ones included", async () => {
    const usage = async () =>
      (
        (await (await h.admin("GET", "/admin/tenants/default/recommendations/usage")).json()) as {
          usage: { period: string; calls: number }[];
        }
      ).usage;
    const before = (await usage())[0]?.calls ?? 0;
    await keyed(h, key, fresh());
    engine.state.mode = "down";
    await keyed(h, key, fresh());
    engine.state.mode = "ok";
    const query = fresh();
    await keyed(h, key, query);
    await keyed(h, key, query); // a cache hit spends nothing
    await keyed(h, key, "?count=2"); // no subject: no call
    expect(await usage()).toEqual([{ period: "2026-11", calls: before + 3 }]);
  });
});

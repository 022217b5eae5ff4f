import { describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { keyed, type Reply, recommendationSuiteWorld } from "./fixture";

describe.each(storeKinds)("GET /v1/recommendations (%s store)", (kind) => {
  const w = recommendationSuiteWorld(kind);
  let n = 0;
  /** A URL no earlier test asked for (the cache is per full URL). */
  const fresh = (query = "") => `?userId=reader-${++n}${query}`;

  it("answers the site's live items best first, hydrated from the content store, with recomm_id on every url", async () => {
    const res = await keyed(w.h, w.key, fresh("&count=4&scenario=homepage"));
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
    const call = w.engine.calls.at(-1)!;
    expect(call).toMatchObject({ kind: "user", userId: `reader-${n}` });
    expect(call.body).toMatchObject({ count: 8, scenario: "homepage", cascadeCreate: true });
  });

  it("answers 5 items by default and at most count", async () => {
    const reply = (await (await keyed(w.h, w.key, fresh())).json()) as Reply;
    expect(reply.items.length).toBe(5);
    const one = (await (await keyed(w.h, w.key, fresh("&count=1"))).json()) as Reply;
    expect(one.items.map((i) => i.id)).toEqual(["3"]);
  });

  it("uses domainUserId when there is no userId, and with neither answers empty without calling the engine", async () => {
    await keyed(w.h, w.key, "?domainUserId=device-abc");
    expect(w.engine.calls.at(-1)?.userId).toBe("device-abc");
    const before = w.engine.calls.length;
    const res = await keyed(w.h, w.key, "?edition=2026-11-21&count=3");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recommId: null, items: [] });
    expect(w.engine.calls.length).toBe(before);
  });

  it("asks item-to-item for the item being read, and answers empty for an item the engine does not know", async () => {
    const reply = (await (await keyed(w.h, w.key, fresh("&itemId=3&scenario=read-next"))).json()) as Reply;
    expect(w.engine.calls.at(-1)).toMatchObject({ kind: "item", itemId: "3", userId: `reader-${n}` });
    expect(reply.items.map((i) => i.id)).not.toContain("3");
    const unknown = await keyed(w.h, w.key, fresh("&itemId=999"));
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual({ recommId: null, items: [] });
  });

  it("caches an answer 15 minutes per key, site and full URL: one edition shares one recommId", async () => {
    const query = fresh("&edition=morning");
    const first = (await (await keyed(w.h, w.key, query)).json()) as Reply;
    const calls = w.engine.calls.length;
    const again = (await (await keyed(w.h, w.key, query)).json()) as Reply;
    expect(again).toEqual(first);
    expect(w.engine.calls.length).toBe(calls);
    // Another edition is another URL.
    await keyed(w.h, w.key, query.replace("morning", "evening"));
    expect(w.engine.calls.length).toBe(calls + 1);
    // Kept while its age is at most 15 minutes (lru-cache's ttl), asked again past them.
    w.h.clock.advance(15 * 60_000);
    await keyed(w.h, w.key, query);
    expect(w.engine.calls.length).toBe(calls + 1);
    w.h.clock.advance(1);
    const later = (await (await keyed(w.h, w.key, query)).json()) as Reply;
    expect(w.engine.calls.length).toBe(calls + 2);
    expect(later.recommId).not.toBe(first.recommId);
  });

  it("makes one engine call for 1,000 concurrent identical requests", async () => {
    w.engine.state.mode = "slow";
    w.engine.state.slowMs = 100;
    const query = fresh();
    const before = w.engine.calls.length;
    const replies = await Promise.all(Array.from({ length: 1000 }, () => keyed(w.h, w.key, query)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const ids = new Set(await Promise.all(replies.map(async (r) => ((await r.json()) as Reply).recommId)));
    expect(ids.size).toBe(1);
    expect(w.engine.calls.length).toBe(before + 1);
  }, 30_000);

  it("never caches an error: the next identical request calls the engine again", async () => {
    const query = fresh();
    w.engine.state.mode = "down";
    const failed = await keyed(w.h, w.key, query);
    expect(failed.status).toBe(503);
    const before = w.engine.calls.length;
    w.engine.state.mode = "ok";
    const res = await keyed(w.h, w.key, query);
    expect(res.status).toBe(200);
    expect(w.engine.calls.length).toBe(before + 1);
  });

  it("counts every engine call against the tenant's quota, failed ones included", async () => {
    const usage = async () =>
      (
        (await (await w.h.admin("GET", "/admin/tenants/default/recommendations/usage")).json()) as {
          usage: { period: string; calls: number }[];
        }
      ).usage;
    const before = (await usage())[0]?.calls ?? 0;
    await keyed(w.h, w.key, fresh());
    w.engine.state.mode = "down";
    await keyed(w.h, w.key, fresh());
    w.engine.state.mode = "ok";
    const query = fresh();
    await keyed(w.h, w.key, query);
    await keyed(w.h, w.key, query); // a cache hit spends nothing
    await keyed(w.h, w.key, "?count=2"); // no subject: no call
    expect(await usage()).toEqual([{ period: "2026-11", calls: before + 3 }]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { composeFilter, literal } from "../../src/recommendations/reql";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeRecombee } from "../helpers/fake-recombee";
import { type Harness, startHarness } from "../helpers/harness";
import { keyed, recommendationWorld } from "./fixture";

/** Splits ReQL into its string literals and the code between them (a literal's escapes honoured). */
function tokens(reql: string): { code: string; literals: string[] } {
  let code = "";
  const literals: string[] = [];
  for (let i = 0; i < reql.length; i++) {
    if (reql[i] !== '"') {
      code += reql[i];
      continue;
    }
    let value = "";
    for (i++; i < reql.length && reql[i] !== '"'; i++) value += reql[i] === "\\" ? reql[++i] : reql[i];
    literals.push(value);
    code += "$";
  }
  return { code, literals };
}

describe("feed filters as ReQL", () => {
  it.each([
    ["sections=world,politics", `("world" in 'sections' or "politics" in 'sections')`],
    ["tags=brexit", `("brexit" in 'tags')`],
    ["authors=501,502", `("501" in 'authors' or "502" in 'authors')`],
    ["types=article,video", `('type' in {"article","video"})`],
    ["excludeSections=sport", `not ("sport" in 'sections')`],
    ["excludeTags=ads,sponsored", `not ("ads" in 'tags' or "sponsored" in 'tags')`],
    ["excludeTypes=podcast", `('type' not in {"podcast"})`],
    ["languages=en,de", `('language' in {"en","de"})`],
    ["publishedAfter=2026-11-01T00:00:00Z", `('published_at' >= 1793491200)`],
    ["publishedBefore=2026-11-21T12:00:00%2B01:00", `('published_at' <= 1795258800)`],
    [
      "excludeViewed=true",
      `('itemId' not in map(lambda 'i': i["itemId"], user_interactions(context_user["userId"], {"detail_views"})))`,
    ],
  ])("maps %s", (query, reql) => {
    const params = Object.fromEntries(new URLSearchParams(query));
    const filters: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(params)) {
      if (k.startsWith("published")) filters[k] = Date.parse(v);
      else if (k === "excludeViewed") filters[k] = v === "true";
      else filters[k] = v.split(",");
    }
    expect(composeFilter(filters)).toBe(reql);
  });

  it("composes parameters with AND, and none at all as no filter", () => {
    expect(composeFilter({ sections: ["world"], languages: ["en"] })).toBe(
      `("world" in 'sections') and ('language' in {"en"})`,
    );
    expect(composeFilter({})).toBeUndefined();
    expect(composeFilter({ excludeViewed: false, tags: [] })).toBeUndefined();
  });

  it("keeps a hostile value inside one string literal", () => {
    for (const hostile of [`x" or true or "`, `a\\" or 1 or "b`, `\\`, `"}) or ('itemId' != "`, `'sections'`]) {
      const reql = literal(hostile);
      const parsed = tokens(reql);
      expect(parsed).toEqual({ code: "$", literals: [hostile] });
    }
  });
});

describe.each(storeKinds)("feed filters reach the engine (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let engine: FakeRecombee;
  let key: string;
  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db);
    ({ engine, key } = await recommendationWorld(h));
  }, 60_000);
  afterAll(async () => {
    engine.stop();
    await h.stop();
    await db.drop();
  }, 60_000);

  it("sends every filter of the query as one ReQL filter", async () => {
    const res = await keyed(
      h,
      key,
      "?userId=u1&sections=world&excludeTags=ads&types=article&languages=en&publishedAfter=2026-11-01T00:00:00Z",
    );
    expect(res.status).toBe(200);
    expect(engine.calls.at(-1)?.body.filter).toBe(
      `("world" in 'sections') and ('type' in {"article"}) and not ("ads" in 'tags') and ('language' in {"en"}) and ('published_at' >= 1793491200)`,
    );
  });

  it("sends no filter when the query has none", async () => {
    await keyed(h, key, "?userId=u2");
    expect(engine.calls.at(-1)?.body.filter).toBeUndefined();
  });

  it("keeps an injection attempt in every filter parameter inside string literals", async () => {
    const attack = `x" or true or "`;
    const names = [
      "sections",
      "tags",
      "authors",
      "types",
      "excludeSections",
      "excludeTags",
      "excludeTypes",
      "languages",
    ];
    for (const name of names) {
      const res = await keyed(h, key, `?userId=u3&${name}=${encodeURIComponent(attack)},${encodeURIComponent("b\\")}`);
      expect(res.status).toBe(200);
      const filter = engine.calls.at(-1)?.body.filter as string;
      const { code, literals } = tokens(filter);
      expect(literals).toEqual([attack, "b\\"]);
      expect(code).not.toContain("true");
    }
  });

  it("answers 422 for ids outside the engine's alphabet, control characters, or bad instants", async () => {
    for (const query of [
      "?userId=a/b",
      "?domainUserId=..%2F..%2Fitems",
      "?userId=u&itemId=1%3Fx%3D1",
      "?userId=u&sections=a%0Ab",
      "?userId=u&publishedAfter=yesterday",
      "?userId=u&excludeViewed=yes",
      "?userId=u&count=0",
      "?userId=u&count=51",
      "?userId=u&count=two",
    ]) {
      const res = await keyed(h, key, query);
      expect([query, res.status]).toEqual([query, 422]);
    }
  });
});

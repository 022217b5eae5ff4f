import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { newUser, outcomeFor, postRows, type Reply, stored, streamingDocument } from "./fixture";

const T0 = Date.parse("2026-11-21T10:00:00Z");

describe.each(storeKinds)("POST /v1/streaming/{pipeline} (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let writer: string;
  let reader: string;
  let n = 0;
  const user = () => newUser(h, `streamer${++n}@example.com`);
  const post = async (pipeline: string, rows: unknown[]): Promise<Reply> => {
    const res = await postRows(h, writer, pipeline, { rows });
    expect(res.status).toBe(200);
    return (await res.json()) as Reply;
  };

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    ({ key: writer } = await seedSite(h, "news", streamingDocument(), { permissions: ["streaming:write"] }));
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "decide" });
    reader = ((await issued.json()) as { key: string }).key;
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  it("stores every declared column of each row and answers what landed", async () => {
    const [a, b] = [await user(), await user()];
    const reply = await post("engagement", [
      { user_id: a, window_end: "2026-11-21T10:00:00Z", score: 0.75, visits: 12, churn_risk: true, segment: "loyal" },
      { user_id: b, window_end: T0, score: 1 },
    ]);
    expect(reply).toEqual({ received: 2, rejected: {} });
    expect(await stored(h, a)).toEqual({
      windowEnd: T0,
      values: { score: 0.75, visits: 12, churn_risk: true, segment: "loyal" },
    });
    expect(await stored(h, b)).toEqual({ windowEnd: T0, values: { score: 1 } });
  });

  it("accepts ISO 8601 with an offset or fractional seconds, and epoch milliseconds", async () => {
    const u = await user();
    expect(await post("engagement", [{ user_id: u, window_end: "2026-11-21T11:00:00+01:00", score: 1 }])).toEqual({
      received: 1,
      rejected: {},
    });
    expect((await stored(h, u))?.windowEnd).toBe(T0);
    await post("engagement", [{ user_id: u, window_end: "2026-11-21T10:00:00.500Z", score: 2 }]);
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 500, values: { score: 2 } });
  });

  it("keeps an omitted column, clears a null one and ignores undeclared columns and site_id", async () => {
    const u = await user();
    await post("engagement", [{ user_id: u, window_end: T0, score: 0.5, segment: "new", churn_risk: false }]);
    const reply = await post("engagement", [
      { user_id: u, window_end: T0 + 1000, score: 0.9, segment: null, site_id: "elsewhere", undeclared: "x" },
    ]);
    expect(reply).toEqual({ received: 1, rejected: {} });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 1000, values: { score: 0.9, churn_risk: false } });
    // A row of nothing but its window moves the window and keeps every value.
    await post("engagement", [{ user_id: u, window_end: T0 + 2000 }]);
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 2000, values: { score: 0.9, churn_risk: false } });
    // A first row's null is stored as absent.
    const v = await user();
    await post("engagement", [{ user_id: v, window_end: T0, score: null, visits: 3 }]);
    expect(await stored(h, v)).toEqual({ windowEnd: T0, values: { visits: 3 } });
  });

  it("never writes an older window over a newer one; a retry of the same window lands again", async () => {
    const u = await user();
    await post("engagement", [{ user_id: u, window_end: T0 + 5000, score: 5 }]);
    expect(await post("engagement", [{ user_id: u, window_end: T0 + 4999, score: 4, visits: 1 }])).toEqual({
      received: 0,
      rejected: { stale: 1 },
    });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 5000, values: { score: 5 } });
    // The same row again (a client's retry) is not older: it lands, and changes nothing.
    expect(await post("engagement", [{ user_id: u, window_end: T0 + 5000, score: 5 }])).toEqual({
      received: 1,
      rejected: {},
    });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 5000, values: { score: 5 } });
  });

  it("resolves one user's rows of a batch latest-first: older rows are stale, equal ones merge in order", async () => {
    const u = await user();
    const reply = await post("engagement", [
      { user_id: u, window_end: T0 + 3000, score: 3, segment: "a" },
      { user_id: u, window_end: T0 + 1000, score: 1, visits: 1 },
      { user_id: u.toUpperCase(), window_end: T0 + 3000, segment: "b", churn_risk: true },
      { user_id: u, window_end: T0 + 2000, score: 2 },
    ]);
    expect(reply).toEqual({ received: 2, rejected: { stale: 2 } });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 3000, values: { score: 3, segment: "b", churn_risk: true } });
  });

  it("keeps each pipeline's row apart", async () => {
    const u = await user();
    await post("engagement", [{ user_id: u, window_end: T0 + 9000, score: 1 }]);
    expect(await post("loyalty", [{ user_id: u, window_end: T0, tier: 4 }])).toEqual({ received: 1, rejected: {} });
    expect(await stored(h, u, "loyalty")).toEqual({ windowEnd: T0, values: { tier: 4 } });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 9000, values: { score: 1 } });
  });

  it("lets decide read streaming.<pipeline>.<field> as soon as the write is answered", async () => {
    const u = await user();
    // Held in memory before any row exists: missing facts.
    expect(await outcomeFor(h, reader, "retain", u)).toBe("none");
    expect(await outcomeFor(h, reader, "loyal", u)).toBe("unknown");
    await post("engagement", [{ user_id: u, window_end: T0, churn_risk: true }]);
    expect(await outcomeFor(h, reader, "retain", u)).toBe("offer");
    await post("loyalty", [{ user_id: u, window_end: T0, tier: 3 }]);
    expect(await outcomeFor(h, reader, "loyal", u)).toBe("gold");
    await post("loyalty", [{ user_id: u, window_end: T0 + 1, tier: 1 }]);
    expect(await outcomeFor(h, reader, "loyal", u)).toBe("other");
    // Cleared: missing again.
    await post("engagement", [{ user_id: u, window_end: T0 + 1, churn_risk: null }]);
    expect(await outcomeFor(h, reader, "retain", u)).toBe("none");
    // A stale row changes nothing decide reads.
    await post("loyalty", [{ user_id: u, window_end: T0, tier: 5 }]);
    expect(await outcomeFor(h, reader, "loyal", u)).toBe("other");
  });

  it("loads no streaming values for a request whose features do not read them", async () => {
    const u = await user();
    await post("engagement", [{ user_id: u, window_end: T0, churn_risk: true }]);
    // Counted where decide asks the cache, not by what it holds: on the server store this
    // process's own change notification for the write above may arrive while the load is in
    // flight, and such a load answers its request without being kept (src/streaming/facts-cache.ts).
    const cache = h.deps.streamingFacts;
    const entries = (cache as unknown as { entries: Map<string, unknown> }).entries;
    const before = entries.size;
    const asked: string[] = [];
    const get = cache.get.bind(cache);
    cache.get = (tenantId, siteId, userId) => {
      asked.push(userId);
      return get(tenantId, siteId, userId);
    };
    try {
      expect(await outcomeFor(h, reader, "plain", u)).toBe("on");
      expect(asked).toEqual([]);
      expect(entries.size).toBe(before);
      expect(await outcomeFor(h, reader, "retain", u)).toBe("offer");
      expect(asked).toEqual([u]);
    } finally {
      delete (cache as { get?: unknown }).get;
    }
  });

  it("drops a user's stored values when the user is erased, and refuses later rows as erased", async () => {
    const u = await user();
    await post("engagement", [{ user_id: u, window_end: T0, score: 1 }]);
    await post("loyalty", [{ user_id: u, window_end: T0, tier: 2 }]);
    await h.deps.identityDeps.identity.erase(u, new Date(T0));
    expect(await h.deps.streamingStore.rowsOf("default", "news", [u])).toEqual([]);
    expect(await post("engagement", [{ user_id: u, window_end: T0 + 1, score: 2 }])).toEqual({
      received: 0,
      rejected: { erased: 1 },
    });
  });

  it("exposes window_end as an ISO 8601 string", async () => {
    const u = await user();
    await post("loyalty", [{ user_id: u, window_end: T0 + 250, tier: 2 }]);
    expect(await h.deps.streamingFacts.get("default", "news", u)).toEqual({
      loyalty: { tier: 2, window_end: "2026-11-21T10:00:00.250Z" },
    });
  });
});

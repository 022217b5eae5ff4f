import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { writeBatch } from "../../src/streaming/service";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { newUser, postRows, type Reply, stored, streamingDocument } from "./fixture";

const T0 = Date.parse("2026-11-21T10:00:00Z");
const OTHER_UUID = "00000000-0000-4000-8000-000000000000";

describe.each(storeKinds)("streaming rows refused, and bad bodies (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let n = 0;
  const user = () => newUser(h, `refused${++n}@example.com`);
  const post = async (rows: unknown[], pipeline = "engagement"): Promise<Reply> => {
    const res = await postRows(h, key, pipeline, { rows });
    expect(res.status).toBe(200);
    const reply = (await res.json()) as Reply;
    // received plus every count is the batch size.
    expect(reply.received + Object.values(reply.rejected).reduce((a, b) => a + b, 0)).toBe(rows.length);
    return reply;
  };

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    ({ key } = await seedSite(h, "news", streamingDocument(), { permissions: ["streaming:write"] }));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  it("counts each rejection reason, and lands the rest of the batch", async () => {
    const [ok, erased, stale] = [await user(), await user(), await user()];
    await h.deps.identityDeps.identity.erase(erased, new Date(T0));
    await post([{ user_id: stale, window_end: T0 + 10, score: 1 }]);
    const reply = await post([
      { user_id: ok, window_end: T0, score: 0.5 },
      { window_end: T0, score: 1 },
      { user_id: null, window_end: T0 },
      { user_id: "", window_end: T0 },
      { user_id: ok },
      { user_id: ok, window_end: null },
      { user_id: OTHER_UUID, window_end: T0 },
      { user_id: "not-a-uuid", window_end: T0 },
      { user_id: erased, window_end: T0, score: 1 },
      { user_id: stale, window_end: T0, score: 2 },
      "a string",
      null,
      [ok, T0],
      42,
      { user_id: 7, window_end: T0 },
      { user_id: ok, window_end: "yesterday" },
      { user_id: ok, window_end: "2026-11-21T10:00:00" },
      { user_id: ok, window_end: 1.5 },
      { user_id: ok, window_end: -1 },
      { user_id: ok, window_end: true },
      { user_id: ok, window_end: T0, score: "high" },
      { user_id: ok, window_end: T0, visits: 1.5 },
      { user_id: ok, window_end: T0, visits: 2 ** 60 },
      { user_id: ok, window_end: T0, churn_risk: "true" },
      { user_id: ok, window_end: T0, segment: 5 },
      { user_id: ok, window_end: T0, segment: "x".repeat(1025) },
      { user_id: ok, window_end: T0, score: { nested: 1 } },
    ]);
    expect(reply).toEqual({
      received: 1,
      rejected: {
        missing_user_id: 3,
        missing_window_end: 2,
        unknown_user: 2,
        erased: 1,
        stale: 1,
        type_mismatch: 17,
      },
    });
    expect(await stored(h, ok)).toEqual({ windowEnd: T0, values: { score: 0.5 } });
    expect(await stored(h, erased)).toBeUndefined();
    expect(await stored(h, stale)).toEqual({ windowEnd: T0 + 10, values: { score: 1 } });
  });

  it("refuses a row for a user of another tenant as unknown_user", async () => {
    expect((await h.admin("POST", "/admin/tenants", { id: "other" })).status).toBe(201);
    const res = await h.admin("POST", "/admin/tenants/other/users", { email: "elsewhere@example.com" });
    const stranger = ((await res.json()) as { user: { id: string } }).user.id;
    expect(await post([{ user_id: stranger, window_end: T0, score: 1 }])).toEqual({
      received: 0,
      rejected: { unknown_user: 1 },
    });
  });

  it("counts unknown_site when the site stops being served before the batch is written", async () => {
    const u = await user();
    const site = h.deps.registry.site("default", "news")!;
    const pipeline = site.live!.document.pipelines!.engagement!;
    expect((await h.admin("POST", "/admin/tenants/default/sites/news/disable")).status).toBeLessThan(300);
    try {
      const deps = { store: h.deps.streamingStore, written: () => h.deps.changes.announce(), now: h.clock.now };
      const reply = await writeBatch(deps, site, "engagement", pipeline, [
        { user_id: u, window_end: T0, score: 1 },
        { user_id: "not-a-uuid", window_end: T0 },
        { user_id: u, window_end: T0 - 1 },
        { window_end: T0 },
      ]);
      expect(reply).toEqual({ received: 0, rejected: { unknown_site: 3, missing_user_id: 1 } });
      expect(await stored(h, u)).toBeUndefined();
      // Through the route, a site no longer served is the key guard's 404.
      const res = await postRows(h, key, "engagement", { rows: [] });
      expect(res.status).toBe(404);
      expect((await res.json()).error).toMatchObject({ code: "not_found", message: "Unknown site." });
    } finally {
      expect((await h.admin("POST", "/admin/tenants/default/sites/news/enable")).status).toBeLessThan(300);
    }
  });

  it("answers 404 for a pipeline the site does not declare", async () => {
    for (const name of ["nope", "retain", "Engagement", "constructor", "__proto__"]) {
      const res = await postRows(h, key, name, { rows: [] });
      expect(res.status).toBe(404);
      expect((await res.json()).error).toMatchObject({ code: "not_found", message: "Unknown pipeline." });
    }
  });

  it("answers an empty batch with nothing received", async () => {
    expect(await post([])).toEqual({ received: 0, rejected: {} });
  });

  it("answers 422 for a body that is not { rows: [...] }, writing nothing", async () => {
    const u = await user();
    for (const body of [
      {},
      { rows: {} },
      { rows: "x" },
      { rows: null },
      [],
      [{ user_id: u }],
      "rows",
      1,
      { row: [] },
    ]) {
      const res = await postRows(h, key, "engagement", body);
      expect(res.status).toBe(422);
      expect((await res.json()).error.code).toBe("validation_failed");
    }
    expect(await stored(h, u)).toBeUndefined();
  });

  it("answers 422 for the whole batch when any string holds NUL or a lone surrogate", async () => {
    const u = await user();
    const rows = (bad: string) => [
      { user_id: u, window_end: T0, score: 1 },
      { user_id: u, window_end: T0, segment: bad },
    ];
    expect((await postRows(h, key, "engagement", { rows: rows("a\u0000b") })).status).toBe(422);
    const raw = JSON.stringify({ rows: rows("LONE") }).replace("LONE", "\\ud800");
    const res = await h.request("POST", "/v1/streaming/engagement", { headers: { "x-api-key": key }, rawBody: raw });
    expect(res.status).toBe(422);
    // Even in an undeclared column or a member name.
    const undeclared = await postRows(h, key, "engagement", { rows: [{ user_id: u, window_end: T0, note: "\u0000" }] });
    expect(undeclared.status).toBe(422);
    expect(await stored(h, u)).toBeUndefined();
  });

  it("answers 422 for a window_end far from the service's clock, writing nothing, so no row can freeze a user", async () => {
    const u = await user();
    const now = h.clock.now();
    const DAY = 86_400_000;
    // Year 275760, the latest time a JavaScript date holds: once stored, every later row was stale.
    for (const far of [8_640_000_000_000_000, now + DAY + 1, "2099-01-01T00:00:00Z", 0, now - 3651 * DAY]) {
      const res = await postRows(h, key, "engagement", {
        rows: [
          { user_id: u, window_end: T0, score: 1 },
          { user_id: u, window_end: far, score: 2 },
        ],
      });
      expect(res.status).toBe(422);
      const body = await res.json();
      expect(body.error.code).toBe("validation_failed");
      expect(body.error.details).toEqual([
        { path: "/rows/1/window_end", message: "must be within 10 years before and 1 day after the service's clock" },
      ]);
      expect(await stored(h, u)).toBeUndefined();
    }
    // The edges land: a day ahead, then an honest row an hour later is stale only until then.
    expect(await post([{ user_id: u, window_end: now + DAY, score: 3 }])).toEqual({ received: 1, rejected: {} });
    expect(await post([{ user_id: u, window_end: now, score: 4 }])).toEqual({ received: 0, rejected: { stale: 1 } });
    h.clock.advance(DAY + 1);
    expect(await post([{ user_id: u, window_end: h.clock.now(), score: 5 }])).toEqual({ received: 1, rejected: {} });
    expect(await stored(h, u)).toEqual({ windowEnd: h.clock.now(), values: { score: 5 } });
    h.clock.advance(-(DAY + 1));
  });

  it("answers 413 for more than 1,000 rows and writes none of them", async () => {
    const u = await user();
    const rows = Array.from({ length: 1001 }, (_, i) => ({ user_id: u, window_end: T0 + i, score: i }));
    const res = await postRows(h, key, "engagement", { rows });
    expect(res.status).toBe(413);
    const body = await res.json();
    expect(body.error.code).toBe("payload_too_large");
    expect(body.error.message).toBe("A batch carries at most 1000 rows.");
    expect(await stored(h, u)).toBeUndefined();
    // Exactly 1,000 is accepted: one user's latest row lands, the older 999 are stale.
    expect(await post(rows.slice(0, 1000))).toEqual({ received: 1, rejected: { stale: 999 } });
    expect(await stored(h, u)).toEqual({ windowEnd: T0 + 999, values: { score: 999 } });
  });

  it("answers 400 for a body that is not JSON", async () => {
    const res = await h.request("POST", "/v1/streaming/engagement", {
      headers: { "x-api-key": key, "content-type": "application/json" },
      rawBody: "{rows:",
    });
    expect(res.status).toBe(400);
  });
});

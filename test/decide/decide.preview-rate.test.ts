import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

describe("POST /v1/decide: preview documents, deploy validation and the rate window", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let sportKey: string;

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db);
    ({ key } = await seedSite(h, "news", basicDocument()));
    ({ key: sportKey } = await seedSite(h, "sport", basicDocument()));
    const staged = basicDocument();
    (staged.features.section.outcomes.other as Record<string, unknown>) = { type: "data", fields: { staged: true } };
    expect(
      (await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: staged, preview: true })).status,
    ).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const decide = (headers: Record<string, string> = {}, apiKey = key, site = "news") =>
    h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": site, authorization: `Bearer ${apiKey}`, ...headers },
      body: { features: ["section"] },
    });
  const mint = async (site: string, ttlSeconds?: number) =>
    (await (await h.admin("POST", `/admin/tenants/default/sites/${site}/preview-tokens`, { ttlSeconds })).json())
      .token as string;

  it("evaluates the staged document under a valid preview token and says so", async () => {
    const token = await mint("news");
    const answer = await (await decide({ "x-svc-preview": token })).json();
    expect(answer.preview).toBe(true);
    expect(answer.decisions.section).toEqual({ outcome: "other", type: "data", fields: { staged: true } });
  });

  it("falls back to live, silently, without a token", async () => {
    const answer = await (await decide()).json();
    expect(answer.preview).toBe(false);
    expect(answer.decisions.section).toEqual({ outcome: "other" });
  });

  it("falls back to live for an expired, invalid or other-site token", async () => {
    const expired = await mint("news", 60);
    const otherSite = await mint("sport");
    h.clock.advance(61_000);
    for (const token of [expired, otherSite, "not-a-token", `${(await mint("news")).slice(0, -2)}xx`]) {
      const res = await decide({ "x-svc-preview": token });
      expect(res.status).toBe(200);
      const answer = await res.json();
      expect(answer.preview).toBe(false);
      expect(answer.decisions.section).toEqual({ outcome: "other" });
    }
  });

  it("refuses an invalid document with 422 and JSON paths, leaving live and preview untouched", async () => {
    const bad = basicDocument();
    (bad.features.paywall.rules[1] as Record<string, unknown>).tick = ["no_such_meter"];
    (bad.experiments.wall as Record<string, unknown>).variants = { a: 50, b: 50, c: 1 };
    const res = await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: bad });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.error.code).toBe("validation_failed");
    const paths = body.error.details.map((d: { path: string }) => d.path);
    expect(paths.some((p: string) => p.startsWith("/features/paywall/rules/1/tick"))).toBe(true);
    expect(paths.some((p: string) => p.startsWith("/features/paywall/rules/2/split"))).toBe(true);
    const sites = (await (await h.admin("GET", "/admin/tenants/default/sites")).json()).sites;
    expect(sites.find((s: { id: string }) => s.id === "news")).toMatchObject({ liveVersion: 1, previewVersion: 2 });
    expect((await (await decide()).json()).decisions.section).toEqual({ outcome: "other" });
  });

  it("admits exactly 2,000 per 10-second window per key, then 429 with Retry-After to the window's end", async () => {
    // Start at a window boundary + 2.5 s so Retry-After is predictable.
    h.clock.set(Math.ceil(h.clock.now() / 10_000) * 10_000 + 2_500);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 2_000; i++) {
      const res = await decide();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
    expect(statuses.get(200)).toBe(2_000);
    const refused = await decide();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("8");
    expect(await refused.json()).toMatchObject({ error: { code: "rate_limited", message: "Too many requests." } });
    // Another key has its own window.
    expect((await decide({}, sportKey, "sport")).status).toBe(200);
    h.clock.advance(7_000);
    const later = await decide();
    expect(later.status).toBe(429);
    expect(later.headers.get("retry-after")).toBe("1");
    h.clock.advance(600);
    expect((await decide()).status).toBe(200);
  });

  it("answers 404 Unknown site. for a key's own site once the site is disabled", async () => {
    await h.admin("POST", "/admin/tenants/default/sites/sport/disable");
    const res = await decide({}, sportKey, "sport");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found", message: "Unknown site." } });
  });
});

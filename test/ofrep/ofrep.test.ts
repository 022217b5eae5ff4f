import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { OFREPProvider } from "@openfeature/ofrep-provider";
import { type Client, OpenFeature } from "@openfeature/server-sdk";
import { headlineDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, type Served, seedSite, serveHarness, startHarness } from "../helpers/harness";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

describe.each(storeKinds)("OFREP beside keyed decide, driven by the OpenFeature SDK (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let base: string;
  let server: Served;
  let client: Client;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db, { config: { HOST: "127.0.0.1" } });
    ({ key } = await seedSite(h, "news", headlineDocument()));
    server = serveHarness(h);
    base = server.base;
    const domain = `svc-${kind}`;
    await OpenFeature.setProviderAndWait(
      domain,
      new OFREPProvider({ baseUrl: base, headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` } }),
    );
    client = OpenFeature.getClient(domain);
  }, 60_000);
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await server.stop();
    await h.stop();
    await drop();
  }, 60_000);

  const bulk = (context: Json, headers: Record<string, string> = {}) =>
    fetch(`${base}/ofrep/v1/evaluate/flags`, {
      method: "POST",
      headers: {
        "x-svc-site-id": "news",
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        ...headers,
      },
      body: JSON.stringify({ context }),
    });

  it("answers variant = outcome id, value = the outcome's fields, reason from the rule that matched", async () => {
    const sport = await client.getObjectDetails(
      "section",
      {},
      {
        targetingKey: "reader-1",
        content: signedContent({ id: "a-1", section: "sport" }),
      },
    );
    expect(sport).toMatchObject({
      value: { label: "Sport" },
      variant: "sport",
      reason: "TARGETING_MATCH",
      flagMetadata: { type: "data", rule: 0, preview: false },
    });
    expect(sport.errorCode).toBeUndefined();
    const other = await client.getObjectDetails(
      "section",
      { fallback: true },
      {
        targetingKey: "reader-1",
        content: signedContent({ id: "a-2", section: "news" }),
      },
    );
    expect(other).toMatchObject({ value: {}, variant: "other", reason: "DEFAULT" });
    // No content descriptor: the rule reads content.*, so the feature takes its error slot.
    const unverified = await client.getObjectDetails("section", { fallback: true }, { targetingKey: "reader-1" });
    expect(unverified).toMatchObject({ value: {}, variant: "other", reason: "ERROR" });
  });

  it("answers SPLIT with the experiment in the metadata, and DISABLED for a feature switched off", async () => {
    const split = await client.getObjectDetails("headline", {}, { targetingKey: "reader-2" });
    expect(split.reason).toBe("SPLIT");
    expect(split.flagMetadata.experiment).toBe("wall");
    expect(["a", "b"]).toContain(split.flagMetadata.experimentVariant as string);
    const off = await client.getObjectDetails("hidden", { fallback: true }, { targetingKey: "reader-2" });
    expect(off).toMatchObject({ value: {}, variant: "x", reason: "DISABLED" });
  });

  it("answers FLAG_NOT_FOUND and TARGETING_KEY_MISSING in OFREP's shapes (the SDK falls back)", async () => {
    const ghost = await client.getObjectDetails("ghost", { fallback: true }, { targetingKey: "reader-3" });
    expect(ghost).toMatchObject({ value: { fallback: true }, errorCode: "FLAG_NOT_FOUND", reason: "ERROR" });
    const raw = await fetch(`${base}/ofrep/v1/evaluate/flags/ghost`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ context: { targetingKey: "reader-3" } }),
    });
    expect(raw.status).toBe(404);
    expect(await raw.json()).toEqual({
      key: "ghost",
      errorCode: "FLAG_NOT_FOUND",
      errorDetails: "No feature ghost on this site.",
    });
    const anonymous = await client.getObjectDetails("teaser", { fallback: true }, {});
    expect(anonymous).toMatchObject({ value: { fallback: true }, errorCode: "TARGETING_KEY_MISSING" });
  });

  it("ticks meters as decide does, and carries an ETag only on an answer that ticked none", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push((await client.getObjectDetails("teaser", {}, { targetingKey: "counted" })).variant as string);
    }
    // The `calls` meter allows 2 a day: the third call is off, as it would be on decide.
    expect(seen).toEqual(["on", "on", "off"]);
    const ticking = await fetch(`${base}/ofrep/v1/evaluate/flags/teaser`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ context: { targetingKey: "fresh-reader" } }),
    });
    expect(ticking.status).toBe(200);
    expect(ticking.headers.get("etag")).toBeNull();
  });

  it("evaluates in bulk only the features named in svc.features, with ETag and 304 when nothing ticked", async () => {
    const context = {
      targetingKey: "bulk-reader",
      "svc.features": ["section", "ghost", "hidden"],
      content: signedContent({ id: "b-1", section: "sport" }),
    };
    const first = await bulk(context);
    expect(first.status).toBe(200);
    // Keyed decide's window, which OFREP spends too: the IETF draft's fields.
    expect(first.headers.get("ratelimit-policy")).toBe('"keyed-decide";q=2000;w=10');
    expect(first.headers.get("ratelimit")).toMatch(/^"keyed-decide";r=\d+;t=\d+$/);
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const body = (await first.json()) as Json;
    expect(body.flags.map((f: Json) => [f.key, f.variant ?? f.errorCode, f.reason ?? null])).toEqual([
      ["section", "sport", "TARGETING_MATCH"],
      ["ghost", "FLAG_NOT_FOUND", null],
      ["hidden", "x", "DISABLED"],
    ]);
    const again = await bulk(context, { "if-none-match": etag as string });
    expect(again.status).toBe(304);
    // The teaser was not named: its meter was not ticked.
    const teaser = await bulk({ targetingKey: "bulk-reader", svc: { features: ["teaser"] } });
    expect(teaser.headers.get("etag")).toBeNull();
    const flags = ((await teaser.json()) as Json).flags;
    expect(flags[0]).toMatchObject({ key: "teaser", variant: "on" });
    const decided = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
      body: { features: ["teaser"], userId: "bulk-reader" },
    });
    expect(((await decided.json()) as Json).decisions.teaser.meters.calls.count).toBe(1);
    const empty = await bulk({ targetingKey: "bulk-reader", "svc.features": [] });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ errorCode: "INVALID_CONTEXT" });
  });

  it("evaluates in bulk, when no features are named, every published decision feature that ticks no meter", async () => {
    const context = { targetingKey: "unnamed-reader", content: signedContent({ id: "u-1", section: "sport" }) };
    const first = await bulk(context);
    expect(first.status).toBe(200);
    const body = (await first.json()) as Json;
    // paywall and teaser tick meters: left out, so asking for every flag counts nothing.
    expect(body.flags.map((f: Json) => [f.key, f.reason])).toEqual([
      ["headline", "SPLIT"],
      ["hidden", "DISABLED"],
      ["section", "TARGETING_MATCH"],
    ]);
    const etag = first.headers.get("etag");
    expect(etag).not.toBeNull();
    expect((await bulk(context, { "if-none-match": etag as string })).status).toBe(304);
    const decided = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
      body: { features: ["teaser"], userId: "unnamed-reader" },
    });
    // Decide answers the count before its own tick: the bulk calls ticked nothing.
    expect(((await decided.json()) as Json).decisions.teaser.meters.calls.count).toBe(0);
    const anonymous = await bulk({});
    expect(((await anonymous.json()) as Json).flags.map((f: Json) => [f.key, f.reason ?? f.errorCode])).toEqual([
      ["headline", "TARGETING_KEY_MISSING"],
      ["hidden", "DISABLED"],
      ["section", "ERROR"], // no content descriptor: content.section is unavailable
    ]);
    const none = await fetch(`${base}/ofrep/v1/evaluate/flags`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(none.status).toBe(200);
    expect(((await none.json()) as Json).flags).toHaveLength(3);
  });

  it("refuses a missing key (401) and a key of another site (403)", async () => {
    const res = await fetch(`${base}/ofrep/v1/evaluate/flags/section`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    const elsewhere = await fetch(`${base}/ofrep/v1/evaluate/flags/section`, {
      method: "POST",
      headers: { "x-svc-site-id": "other", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(elsewhere.status).toBe(403);
  });

  it("answers 429 with Retry-After from the same key window as decide", async () => {
    const spend = async (n: number) => {
      const batch = [];
      for (let i = 0; i < n; i++) {
        batch.push(
          h.request("POST", "/v1/decide", {
            headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
            body: { features: ["section"] },
          }),
        );
      }
      return Promise.all(batch);
    };
    let limited = false;
    for (let round = 0; round < 30 && !limited; round++) {
      const answers = await spend(100);
      limited = answers.some((r) => r.status === 429);
    }
    expect(limited).toBe(true);
    const refused = await fetch(`${base}/ofrep/v1/evaluate/flags/section`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ context: { targetingKey: "r" } }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("ratelimit")).toMatch(/^"keyed-decide";r=0;t=\d+$/);
    const viaSdk = await client.getObjectDetails("section", { fallback: true }, { targetingKey: "r" });
    expect(viaSdk.value).toEqual({ fallback: true });
    expect(viaSdk.errorCode).toBeDefined();
  });
});

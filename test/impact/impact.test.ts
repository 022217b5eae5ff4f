import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { run } from "../../src/cli/run";
import { basicDocument, counterDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, seedSite, serveHarness, startHarness } from "../helpers/harness";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

/**
 * basicDocument staged with two changes: a premium reader's paywall answers `metered` instead of
 * `free`, and the teaser's `calls` meter allows one call a day instead of two. `section` is left alone.
 */
function stagedDocument() {
  const doc = basicDocument();
  doc.features.paywall.rules[0] = { when: { fact: "grants.premium", exists: true }, then: "metered" };
  doc.meters.calls.allowance = 1;
  return doc;
}

describe.each(storeKinds)("impact before publish (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let counterKey: string;
  const userIds: string[] = [];

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    // Every request offered is kept (the per-second cap still holds).
    h = await startHarness(db, { config: { HOST: "127.0.0.1", SVC_IMPACT_SAMPLE_EVERY: "1" } });
    ({ key } = await seedSite(h, "news", basicDocument()));
    ({ key: counterKey } = await seedSite(h, "counter", counterDocument()));
    for (const [i, premium] of [true, true, true, false, false].entries()) {
      const created = await h.admin("POST", "/admin/tenants/default/users", { email: `reader-${i}@news.example` });
      const id = ((await created.json()) as Json).user.id as string;
      if (premium) await h.admin("POST", `/admin/tenants/default/users/${id}/grants`, { grant: "premium" });
      userIds.push(id);
    }
  }, 120_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const held = (site: string) => h.deps.impact.samplesOf("default", site);

  /** Waits until the site holds `count` samples (captured after the answer, off its path). */
  const settle = async (site: string, count: number) => {
    for (let i = 0; i < 500 && held(site).length < count; i++) await new Promise((r) => setTimeout(r, 2));
    expect(held(site).length).toBe(count);
  };

  const decide = async (site: string, apiKey: string, body: Json) => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": site, authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  };

  const impact = async (site: string, status = 200) => {
    const res = await h.admin("GET", `/admin/tenants/default/sites/${site}/impact`);
    const body = (await res.json()) as Json;
    expect({ status: res.status, body }).toMatchObject({ status });
    return body;
  };

  it("answers 409 while nothing is staged", async () => {
    const out = await impact("news", 409);
    expect(out.error).toMatchObject({ code: "conflict", message: "No staged document." });
  });

  it("replays the sampled requests: per feature, how many answers would change and from what to what", async () => {
    const features = ["paywall", "section", "teaser"];
    let count = 0;
    for (const userId of userIds) {
      await decide("news", key, { features, userId });
      await settle("news", ++count);
    }
    // Three devices call twice: the second call had one of its two daily calls left.
    for (const deviceId of ["dev-1", "dev-2", "dev-3"]) {
      for (let call = 0; call < 2; call++) {
        await decide("news", key, { features, deviceId });
        await settle("news", ++count);
      }
    }
    const staged = await h.admin("POST", "/admin/tenants/default/sites/news/deploy", {
      document: stagedDocument(),
      preview: true,
    });
    expect(staged.status).toBe(200);

    expect(await impact("news")).toEqual({
      samples: 11,
      liveVersion: 1,
      stagedVersion: 2,
      features: [
        {
          name: "paywall",
          answered: 11,
          changed: 3,
          transitions: [{ from: "free (allow)", to: "metered (allow)", count: 3 }],
        },
        { name: "teaser", answered: 11, changed: 3, transitions: [{ from: "on (allow)", to: "off", count: 3 }] },
        { name: "section", answered: 11, changed: 0, transitions: [] },
      ],
    });
  });

  it("keeps no raw user or device id: subjects are hashed, meters are plain reads", async () => {
    const samples = held("news");
    const stored = JSON.stringify(samples);
    for (const id of [...userIds, "dev-1", "dev-2", "dev-3"]) expect(stored).not.toContain(id);
    for (const s of samples) expect(s.subject).toMatch(/^[0-9a-f]{16}$/);
    // One device's two calls share one hash; another device has another.
    const devices = samples.slice(5).map((s) => s.subject);
    expect(devices[0]).toBe(devices[1] as string);
    expect(devices[2]).not.toBe(devices[0] as string);
    // Reads as the request saw them, before its own tick: the second call had one call counted.
    expect(samples.slice(5).map((s) => s.meters.calls)).toEqual([
      { allowance: 2, count: 0, seen: false },
      { allowance: 2, count: 1, seen: false },
      { allowance: 2, count: 0, seen: false },
      { allowance: 2, count: 1, seen: false },
      { allowance: 2, count: 0, seen: false },
      { allowance: 2, count: 1, seen: false },
    ]);
    expect(Object.keys(samples[0] as object).sort()).toEqual([
      "articleId",
      "content",
      "context",
      "external",
      "features",
      "gift",
      "grants",
      "meters",
      "newsletters",
      "now",
      "org",
      "streaming",
      "subject",
      "user",
    ]);
    expect(samples[0]?.grants).toEqual({ premium: true });
  });

  it("keeps no request made under a preview token or with explain", async () => {
    const before = held("news").length;
    const tokenRes = await h.admin("POST", "/admin/tenants/default/sites/news/preview-tokens", { ttlSeconds: 60 });
    const { token } = (await tokenRes.json()) as Json;
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "x-svc-preview": token },
      body: { features: ["paywall"], deviceId: "dev-preview" },
    });
    expect(((await res.json()) as Json).preview).toBe(true);
    await decide("news", key, { features: ["paywall"], deviceId: "dev-explain", explain: true });
    await new Promise((r) => setTimeout(r, 20));
    expect(held("news").length).toBe(before);
  });

  it("samples at most 20 requests a second in a process, and again the next second", async () => {
    h.clock.advance(1000);
    for (let i = 0; i < 25; i++) await decide("counter", counterKey, { features: ["counter"], deviceId: `c-${i}` });
    await settle("counter", 20);
    h.clock.advance(1000);
    for (let i = 0; i < 3; i++) await decide("counter", counterKey, { features: ["counter"], deviceId: `n-${i}` });
    await settle("counter", 23);
  });

  it("answers 404 for an unknown site and 422 for bad ids, in the envelope", async () => {
    for (const [path, status] of [
      ["/admin/tenants/default/sites/nope/impact", 404],
      ["/admin/tenants/nope/sites/news/impact", 404],
      [`/admin/tenants/default/sites/${"s".repeat(129)}/impact`, 422],
      [`/admin/tenants/${"t".repeat(65)}/sites/news/impact`, 422],
      ["/admin/tenants/default/sites/ne%00ws/impact", 400],
    ] as const) {
      const res = await h.admin("GET", path);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(typeof ((await res.json()) as Json).error.code).toBe("string");
    }
    expect((await h.request("GET", "/admin/tenants/default/sites/news/impact")).status).toBe(401);
  });

  it("prints the replay for operators: npm run svc -- impact <site>", async () => {
    const server = serveHarness(h);
    try {
      let out = "";
      let err = "";
      const env = { SVC_URL: server.base, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN };
      const code = await run(["impact", "news"], {
        env,
        stdout: (t) => {
          out += t;
        },
        stderr: (t) => {
          err += t;
        },
      });
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(out).toBe(
        [
          "11 recent request(s) replayed: live version 1 against staged version 2",
          "paywall: 3 of 11 would change",
          "  3\tfree (allow) -> metered (allow)",
          "teaser: 3 of 11 would change",
          "  3\ton (allow) -> off",
          "section: 0 of 11 would change",
          "",
        ].join("\n"),
      );
    } finally {
      await server.stop();
    }
  });

  it("keeps browser decide requests too", async () => {
    const before = held("news").length;
    const res = await h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news", origin: "https://news.example" },
      body: { features: ["section"], deviceId: "browser-1" },
    });
    expect(res.status).toBe(200);
    await settle("news", before + 1);
    const sample = held("news").at(-1);
    expect(sample?.features).toEqual(["section"]);
    expect(sample?.org).toEqual({});
    expect(JSON.stringify(sample)).not.toContain("browser-1");
  });

  it("replays a seen meter as the reader read it: a lower allowance walls the third article, not a re-read", async () => {
    h.clock.advance(1000);
    const { key: meteredKey } = await seedSite(h, "metered", basicDocument());
    let count = 0;
    for (const id of ["a-1", "a-2", "a-3", "a-1"]) {
      const answer = await decide("metered", meteredKey, {
        features: ["paywall"],
        deviceId: "m-1",
        content: signedContent({ id }),
      });
      expect(answer.decisions.paywall.outcome).toBe("metered");
      await settle("metered", ++count);
    }
    expect(held("metered").map((s) => s.meters.articles)).toEqual([
      { allowance: 3, count: 0, seen: false },
      { allowance: 3, count: 1, seen: false },
      { allowance: 3, count: 2, seen: false },
      { allowance: 3, count: 3, seen: true },
    ]);
    const staged = basicDocument();
    staged.meters.articles.allowance = 2;
    await h.admin("POST", "/admin/tenants/default/sites/metered/deploy", { document: staged, preview: true });
    const out = await impact("metered");
    const paywall = out.features.find((f: Json) => f.name === "paywall");
    expect(paywall).toMatchObject({ answered: 4, changed: 1 });
    expect(paywall.transitions).toHaveLength(1);
    expect(paywall.transitions[0].from).toBe("metered (allow)");
    expect(paywall.transitions[0].to).toMatch(/^wall[AB] \(deny\)$/);
  });
});

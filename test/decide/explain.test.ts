import { describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "../../src/cli/run";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN, serveHarness } from "../helpers/harness";
import { scratchDir } from "../helpers/scratch-dirs";
import { siteWorld } from "../helpers/worlds";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

describe.each(storeKinds)("keyed decide with explain: true (%s store)", (kind) => {
  const w = siteWorld({ document: basicDocument(), kind, config: { HOST: "127.0.0.1" } });

  const decide = async (body: Json): Promise<Json> => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body,
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  };

  it("answers the matched rule, the facts read with their source, and ticks no meter", async () => {
    const content = signedContent({ id: "story-x", section: "news" });
    const body = { features: ["paywall", "section", "ghost"], deviceId: "dev-explain", content };
    const first = await decide({ ...body, explain: true });
    const again = await decide({ ...body, explain: true });
    expect(again).toEqual(first);
    expect(first.exposures).toBeUndefined();
    expect(first.unanswered).toEqual(["ghost"]);
    expect(first.subject).toBe("dev-explain");
    expect(first.contentVerified).toBe(true);
    const paywall = first.explain.paywall;
    expect(paywall.outcome).toBe("metered");
    expect(paywall.matched).toEqual({ rule: 1, condition: { meter: "articles", allows: true } });
    expect(paywall.rules[0]).toEqual({
      index: 0,
      condition: { fact: "grants.premium", exists: true },
      result: "not matched",
      facts: [{ fact: "grants.premium", source: "stored", available: true }],
      meters: [],
    });
    expect(paywall.rules[1].meters).toEqual([
      { meter: "articles", available: true, allowance: 3, count: 0, remaining: 3, seen: false },
    ]);
    expect(paywall.meters).toEqual({ articles: { allowance: 3, count: 0 } });
    expect(first.explain.section.rules[0].facts).toEqual([
      { fact: "content.section", source: "signed", available: true, value: "news" },
    ]);
    expect(first.explain.section.matched).toEqual({ rule: "default" });
    // Nothing was ticked: the real decision still reads the meter untouched.
    const real = await decide(body);
    expect(real.decisions.paywall.meters.articles.count).toBe(0);
  });

  it("says what would change a deny: a grant, a read left of the meter", async () => {
    for (const id of ["s-1", "s-2", "s-3"]) {
      await decide({ features: ["paywall"], deviceId: "dev-spent", content: signedContent({ id }) });
    }
    const answer = await decide({
      features: ["paywall"],
      deviceId: "dev-spent",
      content: signedContent({ id: "s-4" }),
      explain: true,
    });
    const paywall = answer.explain.paywall;
    expect(paywall.type).toBe("deny");
    expect(paywall.matched.rule).toBe(2);
    expect(["a", "b"]).toContain(paywall.matched.split.variant);
    expect(paywall.rules.map((r: Json) => r.result)).toEqual(["not matched", "not matched", "matched"]);
    expect(paywall.wouldChange).toEqual([
      "grant `premium`",
      "a read left of meter `articles` (0 of 3 left this period): it renews when the meter's period rolls over",
    ]);
  });

  it("names the unavailable fact when a feature takes its error slot", async () => {
    const answer = await decide({ features: ["paywall"], deviceId: "dev-no-content", explain: true });
    const paywall = answer.explain.paywall;
    expect(paywall.outcome).toBe("broken");
    expect(paywall.matched.rule).toBe("onError");
    expect(paywall.matched.reason).toContain("no verified content");
    expect(paywall.wouldChange).toContain("a verified content descriptor (content)");
  });

  it("reads a user's grants as stored facts", async () => {
    const created = await w.h.admin("POST", "/admin/tenants/default/users", { email: "explain@news.example" });
    const userId = ((await created.json()) as Json).user.id;
    await w.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" });
    const answer = await decide({ features: ["paywall"], userId, explain: true });
    expect(answer.explain.paywall.matched).toEqual({ rule: 0, condition: { fact: "grants.premium", exists: true } });
    expect(answer.explain.paywall.rules[0].facts).toEqual([
      { fact: "grants.premium", source: "stored", available: true, value: true },
    ]);
  });

  it("is refused on the browser mount (400)", async () => {
    const res = await w.h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news", origin: "https://news.example" },
      body: { features: ["paywall"], explain: true },
    });
    expect(res.status).toBe(400);
  });

  it("prints an explanation for operators: npm run svc -- explain <site> <body.json>", async () => {
    const server = serveHarness(w.h);
    try {
      const file = join(scratchDir("svc-explain-"), "body.json");
      writeFileSync(file, JSON.stringify({ features: ["paywall"], deviceId: "dev-cli" }));
      let out = "";
      let err = "";
      const env = { SVC_URL: server.base, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN };
      const code = await run(["explain", "news", file], {
        env,
        stdout: (t) => {
          out += t;
        },
        stderr: (t) => {
          err += t;
        },
      });
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(out).toContain("paywall: broken (deny)");
      expect(out).toContain("error slot:");
      expect(out).toContain("would change it: a verified content descriptor (content)");
      let json = "";
      await run(["explain", "news", file, "--json"], { env, stdout: (t) => (json += t), stderr: () => undefined });
      expect(JSON.parse(json).explain.paywall.outcome).toBe("broken");
    } finally {
      await server.stop();
    }
  });
});

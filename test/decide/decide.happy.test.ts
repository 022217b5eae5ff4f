import { describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { siteWorld } from "../helpers/worlds";

describe("POST /v1/decide: response contract and effects", () => {
  const w = siteWorld({ document: basicDocument() });

  const decide = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}`, ...headers },
      body,
    });
    expect(res.status).toBe(200);
    return res.json();
  };

  it("answers each member of the contract exactly", async () => {
    const content = signedContent({ id: "a-1", section: "sport" });
    const answer = await decide({
      features: ["paywall", "teaser", "section", "hidden", "ghost"],
      deviceId: "dev-contract",
      content,
    });
    expect(Object.keys(answer).sort()).toEqual(["decisions", "exposures", "preview", "unanswered"]);
    expect(answer.preview).toBe(false);
    expect(answer.unanswered).toEqual(["hidden", "ghost"]);
    expect(answer.exposures).toEqual([]);
    // A seen-meter rule allows and ticks: verdict present, no fields, meters read before the tick.
    expect(answer.decisions.paywall).toEqual({
      outcome: "metered",
      type: "allow",
      meters: { articles: { allowance: 3, count: 0 } },
    });
    // An outcome with fields flattens them; meters present because the rule read one.
    expect(answer.decisions.teaser).toEqual({
      outcome: "on",
      type: "allow",
      fields: { size: "large" },
      meters: { calls: { allowance: 2, count: 0 } },
    });
    // No meter read: no meters member. Verdict `data` from the open set.
    expect(answer.decisions.section).toEqual({ outcome: "sport", type: "data", fields: { label: "Sport" } });
  });

  it("omits type and fields for a plain outcome", async () => {
    const answer = await decide({ features: ["section"], content: signedContent({ id: "a-2", section: "news" }) });
    expect(answer.decisions.section).toEqual({ outcome: "other" });
  });

  it.each([
    ["absent", undefined],
    [
      "tampered",
      { ...signedContent({ id: "a-3", section: "sport" }), payload: JSON.stringify({ id: "a-3", section: "sports" }) },
    ],
    ["signed with another key", signedContent({ id: "a-3", section: "sport" }, "not-the-site-key")],
    [
      "expired",
      signedContent({ id: "a-3", section: "sport", exp: Math.floor(Date.parse("2026-11-21T11:00:00Z") / 1000) }),
    ],
    ["not base64url", { payload: '{"id":"a-3","section":"sport"}', signature: "***" }],
  ])("routes a feature reading content to its error slot when content is %s, still 200", async (_label, content) => {
    const body: Record<string, unknown> = { features: ["section"] };
    if (content) body.content = content;
    const answer = await decide(body);
    expect(answer.decisions.section).toEqual({ outcome: "other" });
    // The error slot of the paywall is distinct from its default: prove routing, not a default.
    const wall = await decide({ ...body, features: ["paywall"], deviceId: "dev-error-slot" });
    expect(wall.decisions.paywall.outcome).toBe("broken");
  });

  it("counts an article once on a seen meter, and every call on a count meter (a retry is not free)", async () => {
    const same = signedContent({ id: "story-1" });
    const first = await decide({ features: ["paywall", "teaser"], deviceId: "dev-meters", content: same });
    const retry = await decide({ features: ["paywall", "teaser"], deviceId: "dev-meters", content: same });
    expect(first.decisions.paywall.meters.articles.count).toBe(0);
    expect(retry.decisions.paywall.meters.articles.count).toBe(1);
    expect(first.decisions.teaser.meters.calls.count).toBe(0);
    expect(retry.decisions.teaser.meters.calls.count).toBe(1);
    const other = await decide({
      features: ["paywall", "teaser"],
      deviceId: "dev-meters",
      content: signedContent({ id: "story-2" }),
    });
    expect(other.decisions.paywall.meters.articles.count).toBe(1);
    expect(other.decisions.teaser.meters.calls.count).toBe(2);
    // The count meter's allowance (2) is spent: the teaser turns off and stops ticking.
    expect(other.decisions.teaser.outcome).toBe("off");
  });

  it("lets an already-seen article through once the seen meter is spent", async () => {
    const articles = ["s-1", "s-2", "s-3"].map((id) => signedContent({ id }));
    for (const content of articles) await decide({ features: ["paywall"], deviceId: "dev-spent", content });
    const fourth = await decide({
      features: ["paywall"],
      deviceId: "dev-spent",
      content: signedContent({ id: "s-4" }),
    });
    expect(fourth.decisions.paywall.outcome).not.toBe("metered");
    expect(fourth.decisions.paywall.meters.articles).toEqual({ allowance: 3, count: 3 });
    const reread = await decide({ features: ["paywall"], deviceId: "dev-spent", content: articles[0] });
    expect(reread.decisions.paywall.outcome).toBe("metered");
    expect(reread.decisions.paywall.meters.articles.count).toBe(3);
  });

  it("only ticks the meters of named features", async () => {
    await decide({ features: ["section"], deviceId: "dev-unnamed", content: signedContent({ id: "x-1" }) });
    const after = await decide({ features: ["teaser"], deviceId: "dev-unnamed" });
    expect(after.decisions.teaser.meters.calls.count).toBe(0);
  });

  it("splits by experiment with a catalog reference carrying exactly the selected keys, one exposure per experiment", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      // Spend the seen meter so the paywall reaches the split rule.
      const subject = `dev-split-${i}`;
      for (const id of ["p1", "p2", "p3"])
        await decide({ features: ["paywall"], deviceId: subject, content: signedContent({ id }) });
      const answer = await decide({
        features: ["paywall", "paywall"],
        deviceId: subject,
        content: signedContent({ id: "p4" }),
      });
      const d = answer.decisions.paywall;
      expect(answer.exposures).toHaveLength(1);
      const variant = answer.exposures[0].data.variant;
      expect(answer.exposures[0]).toEqual({
        schema: "iglu:com.svc/experiment_exposure/jsonschema/1-0-0",
        data: { experiment: "wall", variant, preview: false },
      });
      if (variant === "a")
        expect(d).toMatchObject({ outcome: "wallA", type: "deny", fields: { offer: { title: "Basic", price: 5 } } });
      if (variant === "a") expect(Object.keys(d.fields.offer).sort()).toEqual(["price", "title"]);
      if (variant === "b") expect(d).toMatchObject({ outcome: "wallB", fields: { headline: "Subscribe" } });
      // Same subject, same variant.
      const again = await decide({ features: ["paywall"], deviceId: subject, content: signedContent({ id: "p5" }) });
      expect(again.exposures[0].data.variant).toBe(variant);
      seen.add(variant);
    }
    expect([...seen].sort()).toEqual(["a", "b"]);
  });

  it("gives the same answer whatever the order of the named features", async () => {
    const content = signedContent({ id: "o-1", section: "sport" });
    const a = await decide({ features: ["paywall", "section", "teaser", "ghost"], deviceId: "dev-order-a", content });
    const b = await decide({ features: ["ghost", "teaser", "section", "paywall"], deviceId: "dev-order-b", content });
    expect(b.decisions).toEqual(a.decisions);
    expect([...b.unanswered].sort()).toEqual([...a.unanswered].sort());
  });

  it("reads grants of the keyed userId, and a grant change reaches decide", async () => {
    const user = await (
      await w.h.admin("POST", "/admin/tenants/default/users", { email: "reader@example.com" })
    ).json();
    const userId = user.user.id;
    const before = await decide({ features: ["paywall"], userId, content: signedContent({ id: "g-1" }) });
    expect(before.decisions.paywall.outcome).toBe("metered");
    expect(
      (await w.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" })).status,
    ).toBe(200);
    const granted = await decide({ features: ["paywall"], userId, content: signedContent({ id: "g-2" }) });
    expect(granted.decisions.paywall).toEqual({ outcome: "free", type: "allow" });
    expect((await w.h.admin("DELETE", `/admin/tenants/default/users/${userId}/grants/premium`)).status).toBe(200);
    const revoked = await decide({ features: ["paywall"], userId, content: signedContent({ id: "g-3" }) });
    expect(revoked.decisions.paywall.outcome).toBe("metered");
  });

  it("stops honouring a grant once its expiry passes", async () => {
    const user = await (await w.h.admin("POST", "/admin/tenants/default/users", { email: "trial@example.com" })).json();
    const userId = user.user.id;
    const expiresAt = new Date(w.h.clock.now() + 60_000).toISOString();
    await w.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium", expiresAt });
    expect((await decide({ features: ["paywall"], userId })).decisions.paywall.outcome).toBe("free");
    w.h.clock.advance(61_000);
    expect((await decide({ features: ["paywall"], userId })).decisions.paywall.outcome).not.toBe("free");
  });

  it("starts a daily count meter afresh on the next day, and keeps the old day's count", async () => {
    const body = { features: ["teaser"], deviceId: "dev-rollover" };
    await decide(body);
    expect((await decide(body)).decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 1 } });
    w.h.clock.advance(86_400_000);
    expect((await decide(body)).decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 0 } });
    expect((await decide(body)).decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 1 } });
  });

  it("routes a feature that needs a subject to its error slot when there is none", async () => {
    const answer = await decide({ features: ["paywall"], content: signedContent({ id: "n-1" }) });
    expect(answer.decisions.paywall.outcome).toBe("broken");
  });

  it("swaps to a newly deployed document without restart", async () => {
    const doc = basicDocument();
    (doc.features.section.outcomes.other as Record<string, unknown>) = { type: "redirect" };
    expect((await w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: doc })).status).toBe(200);
    const answer = await decide({ features: ["section"] });
    expect(answer.decisions.section).toEqual({ outcome: "other", type: "redirect" });
    await w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: basicDocument() });
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument, giftDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const DAY = 86_400_000;

describe.each(storeKinds)("gift links (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let plainKey: string;
  let users = 0;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    ({ key } = await seedSite(h, "news", giftDocument()));
    ({ key: plainKey } = await seedSite(h, "plain", basicDocument()));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const newUser = async (): Promise<string> => {
    const res = await h.admin("POST", "/admin/tenants/default/users", { email: `gifter${++users}@example.com` });
    return ((await res.json()) as { user: { id: string } }).user.id;
  };
  const keyed = (path: string, body: unknown, apiKey = key, site = "news") =>
    h.request("POST", path, { headers: { "x-svc-site-id": site, "x-api-key": apiKey }, body });
  const mint = (body: Record<string, unknown>) => keyed("/v1/gift-links", body);
  const mintOk = async (gifter: string, contentId: string) => {
    const res = await mint({ userId: gifter, contentId });
    expect(res.status).toBe(201);
    return (await res.json()) as { token: string; giftId: string; expiresAt: string; remaining: number };
  };
  const decide = (body: Record<string, unknown>) => keyed("/v1/decide", { features: ["paywall"], ...body });
  const paywall = async (article: string, subject: string, giftLink?: string) => {
    const res = await decide({ deviceId: subject, content: signedContent({ id: article }), giftLink });
    expect(res.status).toBe(200);
    return (await res.json()) as {
      decisions: { paywall: { outcome: string; meters?: Record<string, { count: number }> } };
    };
  };
  const report = async () =>
    (await (await h.admin("GET", "/admin/tenants/default/sites/news/gift-links/report")).json()) as {
      gifters: { gifter: string; mints: number; redemptions: number }[];
      articles: { contentId: string; mints: number; redemptions: number }[];
    };

  it("mints a compact token with its expiry and the gifter's remaining allowance, then refuses past the month's limit (409), minting nothing", async () => {
    const gifter = await newUser();
    const first = await mintOk(gifter, "story-1");
    expect(first.token.length).toBeLessThanOrEqual(512);
    expect(first.token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(first.expiresAt).toBe(new Date(h.clock.now() + 14 * DAY).toISOString());
    expect(first.remaining).toBe(1);
    expect((await mintOk(gifter, "story-2")).remaining).toBe(0);
    const spent = await mint({ userId: gifter, contentId: "story-3" });
    expect(spent.status).toBe(409);
    expect((await spent.json()).error.code).toBe("gift_allowance_spent");
    const line = (await report()).gifters.find((g) => g.gifter === gifter);
    expect(line?.mints).toBe(2);
    // A new month gives a new allowance.
    h.clock.advance(31 * DAY);
    expect((await mintOk(gifter, "story-3")).remaining).toBe(1);
  });

  it("never passes the allowance under concurrent mints", async () => {
    const gifter = await newUser();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => mint({ userId: gifter, contentId: `race-${i}` })),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 409, 409, 409, 409]);
    expect((await report()).gifters.find((g) => g.gifter === gifter)?.mints).toBe(2);
  });

  it("binds to a signed descriptor only when it verifies and names the article (422 otherwise, nothing minted)", async () => {
    const gifter = await newUser();
    const good = await mint({ userId: gifter, contentId: "bound-1", content: signedContent({ id: "bound-1" }) });
    expect(good.status).toBe(201);
    for (const content of [
      signedContent({ id: "bound-2" }),
      signedContent({ id: "bound-1" }, "not-the-site-key"),
      { payload: '{"id":"bound-1"}', signature: "x" },
    ]) {
      const res = await mint({ userId: gifter, contentId: "bound-1", content });
      expect(res.status).toBe(422);
      expect((await res.json()).error.code).toBe("unknown_article");
    }
    expect((await report()).gifters.find((g) => g.gifter === gifter)?.mints).toBe(1);
  });

  it("refuses an unknown gifter (422) and hostile input at the edge, minting nothing", async () => {
    const unknown = await mint({ userId: "00000000-0000-4000-8000-000000000099", contentId: "x" });
    expect(unknown.status).toBe(422);
    expect((await unknown.json()).error.code).toBe("unknown_gifter");
    const gifter = await newUser();
    for (const body of [
      { userId: gifter, contentId: "a\u0000b" },
      { userId: gifter, contentId: "\ud800" },
      { userId: gifter, contentId: "" },
      { userId: gifter, contentId: "x".repeat(513) },
      { userId: "not-a-uuid", contentId: "x" },
      { userId: gifter },
      { userId: gifter, contentId: 5 },
    ]) {
      const res = await mint(body);
      expect(res.status).toBe(422);
      expect((await res.json()).error.code).toBeString();
    }
    expect((await report()).gifters.find((g) => g.gifter === gifter)).toBeUndefined();
  });

  it("answers 404 on a site without a gift policy, and 401 without a key", async () => {
    const gifter = await newUser();
    const res = await keyed("/v1/gift-links", { userId: gifter, contentId: "x" }, plainKey, "plain");
    expect(res.status).toBe(404);
    const anonymous = await h.request("POST", "/v1/gift-links", {
      headers: { "x-svc-site-id": "news" },
      body: { userId: gifter, contentId: "x" },
    });
    expect(anonymous.status).toBe(401);
  });

  it("lets a gifted read through without ticking the recipient's meter, and puts gift.* in the snapshot", async () => {
    const gifter = await newUser();
    const { token } = await mintOk(gifter, "gifted-1");
    const gifted = await paywall("gifted-1", "recipient-1", token);
    expect(gifted.decisions.paywall.outcome).toBe("gifted");
    // The meter was never read or ticked: the next metered read starts from zero.
    const metered = await paywall("other-1", "recipient-1");
    expect(metered.decisions.paywall).toEqual({
      outcome: "metered",
      type: "allow",
      meters: { articles: { allowance: 3, count: 0 } },
    } as never);
  });

  it("reads a gift on the browser decide mount too, counting that reader once", async () => {
    const gifter = await newUser();
    const { token } = await mintOk(gifter, "browser-gift");
    const browserRead = async (deviceId: string) => {
      const res = await h.request("POST", "/svc/v1/decide", {
        headers: { "x-svc-site-id": "news", origin: "https://news.example" },
        body: { features: ["paywall"], deviceId, content: signedContent({ id: "browser-gift" }), giftLink: token },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { decisions: { paywall: { outcome: string } } }).decisions.paywall.outcome;
    };
    expect(await browserRead("browser-reader")).toBe("gifted");
    expect(await browserRead("browser-reader")).toBe("gifted");
    expect((await report()).articles.find((a) => a.contentId === "browser-gift")?.redemptions).toBe(1);
  });

  it("answers 200 with no gift for every unusable token", async () => {
    const gifter = await newUser();
    const { token } = await mintOk(gifter, "article-x");
    const [payload, signature] = token.split(".") as [string, string];
    const bad = [
      "",
      "gift",
      `${payload}.${signature.slice(1)}A`,
      `${payload}x.${signature}`,
      `${"a".repeat(600)}.${signature}`,
      "\u0000",
      "\ud800",
    ];
    for (const giftLink of bad) {
      expect((await paywall("article-x", "bad-token-reader", giftLink)).decisions.paywall.outcome).not.toBe("gifted");
    }
    // Another article than the one gifted.
    expect((await paywall("article-y", "bad-token-reader", token)).decisions.paywall.outcome).not.toBe("gifted");
    // No content descriptor: the article read is unknown.
    const noContent = await decide({ deviceId: "bad-token-reader", giftLink: token });
    expect(noContent.status).toBe(200);
    expect((await noContent.json()).decisions.paywall.outcome).not.toBe("gifted");
    // No subject (neither userId nor deviceId): a redemption could not be counted, so no gift.
    const anonymous = await decide({ content: signedContent({ id: "article-x" }), giftLink: token });
    expect(anonymous.status).toBe(200);
    expect((await anonymous.json()).decisions.paywall.outcome).not.toBe("gifted");
    // A token of another site.
    const other = await keyed(
      "/v1/decide",
      { features: ["paywall"], deviceId: "r", content: signedContent({ id: "article-x" }), giftLink: token },
      plainKey,
      "plain",
    );
    expect(other.status).toBe(200);
    expect((await other.json()).decisions.paywall.outcome).not.toBe("gifted");
    // A non-string giftLink is a malformed body (422), as any other member of the wrong type.
    expect((await decide({ deviceId: "r", giftLink: 5 })).status).toBe(422);
  });

  it("reads as no gift once expired (injected clock)", async () => {
    const gifter = await newUser();
    const { token } = await mintOk(gifter, "expiring");
    expect((await paywall("expiring", "early-reader", token)).decisions.paywall.outcome).toBe("gifted");
    h.clock.advance(14 * DAY);
    expect((await paywall("expiring", "late-reader", token)).decisions.paywall.outcome).not.toBe("gifted");
    expect((await paywall("expiring", "early-reader", token)).decisions.paywall.outcome).not.toBe("gifted");
  });

  it("caps distinct readers per link, counting each reader once, and reports redemptions per gifter and article", async () => {
    const gifter = await newUser();
    const { token } = await mintOk(gifter, "capped");
    expect((await paywall("capped", "reader-a", token)).decisions.paywall.outcome).toBe("gifted");
    expect((await paywall("capped", "reader-a", token)).decisions.paywall.outcome).toBe("gifted");
    expect((await paywall("capped", "reader-b", token)).decisions.paywall.outcome).toBe("gifted");
    // Two readers is the policy's cap: a third reads no gift; the first two still do.
    expect((await paywall("capped", "reader-c", token)).decisions.paywall.outcome).not.toBe("gifted");
    expect((await paywall("capped", "reader-b", token)).decisions.paywall.outcome).toBe("gifted");
    const r = await report();
    expect(r.gifters.find((g) => g.gifter === gifter)).toEqual({ gifter, mints: 1, redemptions: 2 });
    expect(r.articles.find((a) => a.contentId === "capped")).toEqual({ contentId: "capped", mints: 1, redemptions: 2 });
  });

  it("is revoked by its gifter (another gifter's revoke is 404) and by an operator", async () => {
    const gifter = await newUser();
    const stranger = await newUser();
    const own = await mintOk(gifter, "revoked-1");
    expect((await paywall("revoked-1", "rev-reader", own.token)).decisions.paywall.outcome).toBe("gifted");
    const foreign = await keyed("/v1/gift-links/revoke", { userId: stranger, giftId: own.giftId });
    expect(foreign.status).toBe(404);
    expect((await paywall("revoked-1", "rev-reader", own.token)).decisions.paywall.outcome).toBe("gifted");
    const revoked = await keyed("/v1/gift-links/revoke", { userId: gifter, giftId: own.giftId });
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toEqual({ giftId: own.giftId, revoked: true });
    expect((await paywall("revoked-1", "rev-reader", own.token)).decisions.paywall.outcome).not.toBe("gifted");

    const second = await mintOk(gifter, "revoked-2");
    const byOperator = await h.admin("POST", `/admin/tenants/default/sites/news/gift-links/${second.giftId}/revoke`);
    expect(byOperator.status).toBe(200);
    expect((await paywall("revoked-2", "rev-reader", second.token)).decisions.paywall.outcome).not.toBe("gifted");
    const unknown = await h.admin(
      "POST",
      "/admin/tenants/default/sites/news/gift-links/00000000-0000-4000-8000-000000000077/revoke",
    );
    expect(unknown.status).toBe(404);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { SIGN_IN_MAIL_LIMITS, SignInMailLimits } from "../../src/identity/mail-limits";
import type { Mail } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

describe.each(storeKinds)("sign-in mail is rate limited (%s store)", (kind: StoreKind) => {
  let h: Harness;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const mails: Mail[] = [];

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { mailTransport: { kind: "log", send: async (m) => void mails.push(m) } });
    await seedSite(h, "news", basicDocument());
    await seedSite(h, "sport", basicDocument());
    // A known address: the answers must not tell it from an unknown one.
    expect((await h.admin("POST", "/admin/tenants/default/users", { email: "known@example.com" })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  const ask = (email: string, site = "news") =>
    h.request("POST", "/v1/id/sign-in/magic-link", { headers: { "x-svc-site-id": site }, body: { email } });
  const stored = async () => {
    await h.deps.outbox.drain();
    const links = rowsOf<{ n: number }>(await db.db.execute(sql`select count(*)::int as n from magic_links`))[0]!.n;
    const outbox = rowsOf<{ n: number }>(await db.db.execute(sql`select count(*)::int as n from mail_outbox`))[0]!.n;
    return { links, outbox };
  };
  const mailedTo = (address: string) => mails.filter((m) => m.to === address).length;
  /** A window of its own for each test: every limit starts afresh. */
  const nextWindow = () => h.clock.advance(SIGN_IN_MAIL_LIMITS.perClient.windowMs + 1);

  it("admits 3 links per address per minute, then 429 with Retry-After; nothing written or sent", async () => {
    nextWindow();
    for (let i = 0; i < 3; i++) {
      expect((await ask("reader@example.com")).status).toBe(200);
      h.clock.advance(1_000);
    }
    const before = await stored();
    h.clock.advance(19_000);
    // The same address however it is spelled: 38 s until the first of the three is a minute old.
    const refused = await ask("Reader@Example.COM");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("38");
    expect(await refused.json()).toEqual({
      error: {
        code: "rate_limited",
        message: "Too many sign-in links were asked for; try again later.",
        details: { retryAfterSeconds: 38 },
      },
    });
    // The limit is per address, across the tenant's sites.
    expect((await ask("reader@example.com", "sport")).status).toBe(429);
    expect(await stored()).toEqual(before);
    await h.deps.outbox.drain();
    expect(mailedTo("reader@example.com")).toBe(3);
    // Sliding: once the first of the three leaves the minute, one more is admitted.
    h.clock.advance(38_000);
    expect((await ask("reader@example.com")).status).toBe(200);
    expect((await ask("reader@example.com")).status).toBe(429);
    // Another address is not held back by this one.
    expect((await ask("other@example.com")).status).toBe(200);
  });

  it("answers known and unknown addresses alike, limited or not", async () => {
    nextWindow();
    const answers = async (email: string) => {
      const out: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await ask(email);
        out.push(`${res.status} ${res.headers.get("retry-after")} ${await res.text()}`);
      }
      return out;
    };
    expect(await answers("known@example.com")).toEqual(await answers("nobody-yet@example.com"));
  });

  it("admits 20 links per client address per 10 minutes, over a real socket", async () => {
    nextWindow();
    const server = h.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
    try {
      const post = (email: string) =>
        fetch(`http://127.0.0.1:${server.port}/v1/id/sign-in/magic-link`, {
          method: "POST",
          headers: { "x-svc-site-id": "news", "content-type": "application/json" },
          body: JSON.stringify({ email }),
        });
      for (let i = 0; i < SIGN_IN_MAIL_LIMITS.perClient.limit; i++) {
        expect((await post(`client-${i}@example.com`)).status).toBe(200);
      }
      const before = await stored();
      const refused = await post("client-last@example.com");
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBe(600);
      expect((await refused.json()).error.code).toBe("rate_limited");
      expect(await stored()).toEqual(before);
      expect(mailedTo("client-last@example.com")).toBe(0);
      // In-process requests have no peer address: they are another client ("unknown").
      expect((await ask("client-last@example.com")).status).toBe(200);
    } finally {
      await h.app.stop();
    }
  });

  it("holds a site to its own ceiling whatever the addresses and clients", async () => {
    nextWindow();
    const small = new SignInMailLimits({
      perAddress: { limit: 3, windowMs: 60_000 },
      perClient: { limit: 1_000, windowMs: 600_000 },
      perSite: { limit: 5, windowMs: 600_000 },
    });
    Object.assign(h.deps.identityDeps, { signInMail: small });
    try {
      for (let i = 0; i < 5; i++) expect((await ask(`site-${i}@example.com`)).status).toBe(200);
      const before = await stored();
      const refused = await ask("site-5@example.com");
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("600");
      expect(await stored()).toEqual(before);
      expect(mailedTo("site-5@example.com")).toBe(0);
      // Another site of the tenant has its own ceiling.
      expect((await ask("site-5@example.com", "sport")).status).toBe(200);
    } finally {
      Object.assign(h.deps.identityDeps, { signInMail: undefined });
    }
  });
});

describe("SignInMailLimits on its own", () => {
  const caller = (address: string, client = "1.2.3.4", siteId = "news") => ({
    tenantId: "t",
    siteId,
    address,
    client,
  });

  it("refuses without spending: a refused address does not use up the client's or site's quota", () => {
    const limits = new SignInMailLimits({
      perAddress: { limit: 1, windowMs: 60_000 },
      perClient: { limit: 2, windowMs: 60_000 },
      perSite: { limit: 100, windowMs: 60_000 },
    });
    expect(limits.take(caller("a"), 0)).toBe(0);
    for (let i = 0; i < 10; i++) expect(limits.take(caller("a"), 1_000)).toBe(59);
    expect(limits.take(caller("b"), 1_000)).toBe(0);
    expect(limits.take(caller("c"), 1_000)).toBe(59);
  });

  it("is exact over any window (no double burst across a window's edge)", () => {
    const limits = new SignInMailLimits();
    const t0 = 59_000;
    for (let i = 0; i < 3; i++) expect(limits.take(caller("x"), t0 + i)).toBe(0);
    // A fixed one-minute window would start afresh at 60,000 and admit three more.
    expect(limits.take(caller("x"), 60_500)).toBeGreaterThan(0);
    expect(limits.take(caller("x"), t0 + 60_000)).toBe(0);
  });

  it("forgets keys whose admissions left the window, so memory follows what was admitted", () => {
    const limits = new SignInMailLimits();
    for (let i = 0; i < 300; i++) limits.take(caller(`a${i}`, `10.0.${i >> 8}.${i & 255}`), i);
    expect(limits.heldKeys()).toBe(300 + 300 + 1);
    limits.sweep(10 * 60_000 + 300);
    expect(limits.heldKeys()).toBe(0);
  });
});

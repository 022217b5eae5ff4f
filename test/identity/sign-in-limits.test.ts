import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { signInWithMagicLink } from "../../src/identity/service";
import type { Mail } from "../../src/mail/outbox";
import { MAIL_BUDGETS, type MailBudgetRules } from "../../src/mail-budget/budgets";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe.each(storeKinds)("sign-in mail is budgeted (%s store)", (kind: StoreKind) => {
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
  /** The start of a fresh hour for each test: every budget starts afresh. */
  const nextHour = () => h.clock.advance(HOUR - (h.clock.now() % HOUR));

  it("admits 3 links per mailbox per 10 minutes (+tags and case fold), then 429 with Retry-After; nothing written", async () => {
    nextHour();
    const remaining: (string | null)[] = [];
    for (const address of ["reader@example.com", "Reader+news@Example.com", "reader+2@example.com"]) {
      const res = await ask(address);
      expect(res.status).toBe(200);
      // The draft's RateLimit fields name the caller's own budget, never the recipient's mailbox.
      expect(res.headers.get("ratelimit-policy")).toBe('"sign-in-client";q=60;w=3600');
      remaining.push(res.headers.get("ratelimit"));
      h.clock.advance(1_000);
    }
    expect(remaining).toEqual([
      '"sign-in-client";r=59;t=3600',
      '"sign-in-client";r=58;t=3599',
      '"sign-in-client";r=57;t=3598',
    ]);
    const before = await stored();
    h.clock.advance(19_000);
    const refused = await ask("READER+other@example.com");
    expect(refused.status).toBe(429);
    // The window ends 10 minutes after it began: 578 s from here (22 s in).
    expect(refused.headers.get("retry-after")).toBe("578");
    // The refusing budget in the draft's fields: nothing left until the same moment.
    expect(refused.headers.get("ratelimit-policy")).toBe('"sign-in-mailbox";q=3;w=600');
    expect(refused.headers.get("ratelimit")).toBe('"sign-in-mailbox";r=0;t=578');
    expect(await refused.json()).toEqual({
      error: {
        code: "rate_limited",
        message: "Too many sign-in links were asked for; try again later.",
        details: { retryAfterSeconds: 578 },
        requestId: refused.headers.get("x-request-id") ?? expect.any(String),
      },
    });
    // The budget is the mailbox's, across the tenant's sites.
    expect((await ask("reader@example.com", "sport")).status).toBe(429);
    expect(await stored()).toEqual(before);
    // Delivery keeps the address as given: the count folds it, the mail does not.
    expect(mailedTo("reader+news@example.com")).toBe(1);
    expect(
      mailedTo("reader@example.com") + mailedTo("reader+news@example.com") + mailedTo("reader+2@example.com"),
    ).toBe(3);
    // The next window admits again; another address was never held back.
    expect((await ask("other@example.com")).status).toBe(200);
    h.clock.advance(578_000);
    expect((await ask("reader@example.com")).status).toBe(200);
  });

  it("sends at most the mailbox's budget when 20 requests for one address race", async () => {
    nextHour();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => ask(`race+${i}@example.com`)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(17);
    const queued = rowsOf<{ n: number }>(
      await db.db.execute(sql`select count(*)::int as n from mail_outbox where recipient like 'race+%'`),
    )[0]!.n;
    expect(queued).toBe(3);
    const links = rowsOf<{ n: number }>(
      await db.db.execute(sql`select count(*)::int as n from magic_links where email like 'race+%'`),
    )[0]!.n;
    expect(links).toBe(3);
  });

  it("answers known and unknown addresses alike, limited or not", async () => {
    nextHour();
    const answers = async (email: string) => {
      const out: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await ask(email);
        out.push(
          `${res.status} ${res.headers.get("retry-after")} ${(await res.text()).replace(/"requestId":"[^"]*"/, "")}`,
        );
      }
      return out;
    };
    expect(await answers("known@example.com")).toEqual(await answers("nobody-yet@example.com"));
  });

  it("admits 60 links per client address per hour, over a real socket", async () => {
    nextHour();
    const perClient = MAIL_BUDGETS.sign_in.find((r) => r.scope === "client")!.limit;
    expect(perClient).toBe(60);
    const server = h.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
    try {
      const post = (email: string) =>
        fetch(`http://127.0.0.1:${server.port}/v1/id/sign-in/magic-link`, {
          method: "POST",
          headers: { "x-svc-site-id": "news", "content-type": "application/json" },
          body: JSON.stringify({ email }),
        });
      for (let i = 0; i < perClient; i++) {
        expect((await post(`client-${i}@example.com`)).status).toBe(200);
      }
      const before = await stored();
      const refused = await post("client-last@example.com");
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBe(3600);
      expect((await refused.json()).error.code).toBe("rate_limited");
      expect(await stored()).toEqual(before);
      expect(mailedTo("client-last@example.com")).toBe(0);
      // In-process requests have no peer address: they are another client ("unknown").
      expect((await ask("client-last@example.com")).status).toBe(200);
    } finally {
      await h.app.stop();
    }
  });

  it("lets a new client sign in after many clients spent their own budgets (no site-wide door)", async () => {
    nextHour();
    const site = h.deps.registry.site("default", "news")!;
    const signIn = (email: string, client: string) =>
      signInWithMagicLink(h.deps.identityDeps, { site, email, client, linkBase: () => "https://news.example/v1" });
    // 12 clients x 60 mails: more than the 500 per 10 minutes that used to close the site.
    for (let c = 0; c < 12; c++) {
      for (let i = 0; i < 60; i++) await signIn(`crowd-${c}-${i}@example.com`, `10.9.0.${c}`);
      const over = await signIn(`crowd-${c}-over@example.com`, `10.9.0.${c}`).catch((error: unknown) => error);
      expect(over).toMatchObject({ code: "rate_limited" });
    }
    expect(await signIn("newcomer@example.com", "10.9.1.1")).toMatchObject({ success: true });
    expect((await ask("newcomer-2@example.com")).status).toBe(200);
  }, 60_000);
});

/** Budgets with a small site ceiling, to reach it. */
const SMALL_SITE: MailBudgetRules = {
  ...MAIL_BUDGETS,
  sign_in: [
    { scope: "mailbox", limit: 3, windowMs: 10 * MINUTE },
    { scope: "client", limit: 1_000, windowMs: HOUR },
    { scope: "site", limit: 5, windowMs: HOUR, warnAt: 4 },
  ],
};

describe.each(storeKinds)("the site's mail ceiling (%s store)", (kind: StoreKind) => {
  let h: Harness;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { mailTransport: { kind: "log", send: async () => {} }, mailBudgets: SMALL_SITE });
    await seedSite(h, "news", basicDocument());
    await seedSite(h, "sport", basicDocument());
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  const ask = (email: string, site = "news") =>
    h.request("POST", "/v1/id/sign-in/magic-link", { headers: { "x-svc-site-id": site }, body: { email } });
  const warnings = () => h.logger.lines.filter((l) => l.includes("mail budget nearly spent"));

  it("warns the operator in the log and on /metrics before it refuses, and only then refuses", async () => {
    for (let i = 0; i < 3; i++) expect((await ask(`site-${i}@example.com`)).status).toBe(200);
    expect(warnings()).toHaveLength(0);
    expect((await ask("site-3@example.com")).status).toBe(200);
    expect(warnings()).toHaveLength(1);
    expect(JSON.parse(warnings()[0]!)).toMatchObject({ level: "warn", kind: "sign_in", scope: "site", limit: 5 });
    expect((await ask("site-4@example.com")).status).toBe(200);
    const refused = await ask("site-5@example.com");
    expect(refused.status).toBe(429);
    // Another site of the tenant has its own ceiling.
    expect((await ask("site-5@example.com", "sport")).status).toBe(200);
    const metrics = await (await h.admin("GET", "/metrics")).text();
    expect(metrics).toContain('svc_mail_budget_warnings_total{kind="sign_in",scope="site"} 1');
    expect(metrics).toContain('svc_mail_budget_refused_total{kind="sign_in",scope="site"} 1');
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { putSubscriptions } from "../../src/newsletters/service";
import { storeKinds } from "../helpers/databases";
import { seedSite } from "../helpers/harness";
import { startSecondProcess } from "../helpers/second-process";
import { type NewsletterWorld, newsletterDocument, newsletterWorld } from "./fixture";

const HOUR = 3_600_000;
// `daily` stays: the fixture's feature reads its standing.
const SLUGS = ["daily", "evening", "sport", "culture"] as const;

/** Four double opt-in lists on the site `four`. */
const fourLists = () =>
  newsletterDocument({
    newsletters: SLUGS.map((slug) => ({ slug, label: `The ${slug}`, description: null })),
  });

describe.each(storeKinds)("newsletter confirmations spend the mail budget (%s store)", (kind) => {
  let w: NewsletterWorld;
  let ids: string[];

  beforeAll(async () => {
    w = await newsletterWorld(kind, { vendor: false });
    await seedSite(w.h, "four", fourLists());
    const res = await w.h.request("GET", "/v1/newsletters/lists", { headers: { "x-svc-site-id": "four" } });
    const body = (await res.json()) as { lists: { id: string; slug: string }[] };
    ids = SLUGS.map((slug) => body.lists.find((l) => l.slug === slug)!.id);
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  /** Moves the clock to the start of the next hour: every hourly budget starts afresh. */
  const nextHour = () => w.h.clock.advance(HOUR - (w.h.clock.now() % HOUR));
  const subscribe = (email: string, lists: string[]) =>
    w.call("PUT", "subscriptions", { site: "four", body: { subscribed: lists, email } });
  /** Outbox rows whose recipient matches a LIKE pattern (queued or sent). */
  const queued = async (pattern: string) => {
    await w.handedOff();
    return rowsOf<{ n: number }>(
      await w.db.db.execute(sql`select count(*)::int as n from mail_outbox where recipient like ${pattern}`),
    )[0]!.n;
  };
  /** Mails the SMTP server received for recipients matching a test. */
  const delivered = async (match: (to: string) => boolean) => {
    await w.h.deps.outbox.drain();
    return w.smtp.received.filter((m) => m.to.some((to) => match(to))).length;
  };

  it("sends at most the mailbox's hourly 10 when 20 anonymous subscribes naming 4 lists race", async () => {
    nextHour();
    const answers = await Promise.all(Array.from({ length: 20 }, () => subscribe("burst@example.com", ids)));
    const statuses = answers.map((r) => r.status);
    // 4 mails a request: two fit in the mailbox's 10, the third would make 12.
    expect(statuses.filter((s) => s === 202)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(18);
    expect(await queued("burst@%")).toBe(8);
    await w.smtp.waitFor(8);
    expect(await delivered((to) => to.includes("burst@example.com"))).toBe(8);
    const refused = answers.find((r) => r.status === 429)!;
    expect((await refused.json()).error.message).toBe(
      "Too many confirmation emails were sent to this address; try again later.",
    );
    expect(Number(refused.headers.get("retry-after"))).toBe(3600);
    // The draft's RateLimit fields: the refusing mailbox budget on a 429, the caller's own on a 202.
    expect(refused.headers.get("ratelimit-policy")).toBe('"confirmation-mailbox";q=10;w=3600');
    expect(refused.headers.get("ratelimit")).toBe('"confirmation-mailbox";r=0;t=3600');
    const admitted = answers.filter((r) => r.status === 202);
    expect(admitted.map((r) => r.headers.get("ratelimit-policy"))).toEqual([
      '"confirmation-client";q=40;w=3600',
      '"confirmation-client";q=40;w=3600',
    ]);
    expect(admitted.map((r) => r.headers.get("ratelimit")).sort()).toEqual([
      '"confirmation-client";r=32;t=3600',
      '"confirmation-client";r=36;t=3600',
    ]);
  }, 120_000);

  it("counts victim+N@ variants against one mailbox, and delivers to each address as given", async () => {
    nextHour();
    const before = w.smtp.received.length;
    const statuses: number[] = [];
    for (let i = 1; i <= 30; i++) statuses.push((await subscribe(`victim+${i}@example.com`, [ids[i % 4]!])).status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(statuses.slice(10).every((s) => s === 429)).toBe(true);
    expect((await subscribe("Victim@Example.com", [ids[0]!])).status).toBe(429);
    expect(await queued("victim%")).toBe(10);
    await w.smtp.waitFor(before + 10);
    expect(await delivered((to) => to.includes("victim+1@example.com"))).toBe(1);
    expect(await delivered((to) => to.includes("victim"))).toBe(10);
    // The next hour gives the mailbox its budget back.
    nextHour();
    expect((await subscribe("victim@example.com", [ids[0]!])).status).toBe(202);
  }, 120_000);

  it("counts mails, not requests: one client's 40 an hour are 10 subscribes naming 4 lists", async () => {
    nextHour();
    for (let i = 0; i < 10; i++) expect((await subscribe(`reader-${i}@example.com`, ids)).status).toBe(202);
    const refused = await subscribe("reader-10@example.com", [ids[0]!]);
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.message).toBe("Too many subscription requests; try again later.");
    expect(await queued("reader-%")).toBe(40);
    expect(await w.h.deps.identityDeps.identity.userByEmail("default", "reader-10@example.com")).toBeUndefined();
  }, 120_000);

  it("holds across processes: two processes racing for one mailbox together send at most its 10", async () => {
    nextHour();
    const second = await startSecondProcess(w.db, w.h);
    try {
      const put = (h: typeof w.h) =>
        h.request("PUT", "/v1/newsletters/subscriptions", {
          headers: { "x-svc-site-id": "four" },
          body: { subscribed: ids, email: "two-processes@example.com" },
        });
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => put(i % 2 === 0 ? w.h : second.harness)));
      // Each process runs the jobs it was handed (a job one holds under its lease waits for it).
      for (const h of [second.harness, w.h]) {
        await h.deps.jobs.runDue();
        await h.deps.jobs.runDue();
      }
      expect(answers.filter((r) => r.status === 202)).toHaveLength(2);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(18);
      expect(await queued("two-processes@%")).toBe(8);
    } finally {
      await second.harness.stop();
      await second.close();
    }
  }, 120_000);

  it("lets a new client subscribe after many clients spent their own budgets (no site-wide door)", async () => {
    nextHour();
    const site = w.h.deps.registry.site("default", "four")!;
    const put = (email: string, client: string) =>
      putSubscriptions(w.h.deps.newsletters, {
        subject: { kind: "anonymous", site, user: null },
        body: { subscribed: ids, email },
        client,
        linkBase: () => "https://id.news.example/v1",
      }).catch((error: unknown) => error);
    // 13 clients x 40 mails: more than the 500 per 10 minutes that used to close the site.
    for (let c = 0; c < 13; c++) {
      for (let i = 0; i < 10; i++)
        expect(await put(`crowd-${c}-${i}@example.com`, `10.8.0.${c}`)).toMatchObject({ status: 202 });
      expect(await put(`crowd-${c}-over@example.com`, `10.8.0.${c}`)).toMatchObject({ code: "rate_limited" });
    }
    expect(await put("newcomer@example.com", "10.8.1.1")).toMatchObject({ status: 202 });
  }, 60_000);
});

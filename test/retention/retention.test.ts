import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import * as s from "../../db/schema";
import { JobQueue } from "../../src/jobs/queue";
import { DrizzleJobStore } from "../../src/jobs/store";
import { RETENTION_JOB, RetentionSweeper } from "../../src/retention/sweeper";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { manualClock, memoryLogger, testConfig } from "../helpers/harness";

const DAY = 86_400_000;
const NOW = Date.parse("2027-03-15T12:00:00Z");
const ago = (ms: number) => new Date(NOW - ms);
const ahead = (ms: number) => new Date(NOW + ms);

describe.each(storeKinds)("retention sweeps what ended and keeps what is live (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let sweeper: RetentionSweeper;
  let queue: JobQueue;
  const clock = manualClock(NOW);
  // Small batches, so every rule takes more than one.
  const settings = { ...testConfig().retention, batch: 2 };
  const user = randomUUID();
  const org = randomUUID();
  const liveGift = randomUUID();
  const endedGift = randomUUID();

  /** Ids (or markers) left in a table, sorted. */
  async function left(query: ReturnType<typeof sql>): Promise<string[]> {
    return rowsOf<{ k: string }>(await db.db.execute(query))
      .map((r) => String(r.k))
      .sort();
  }

  beforeAll(async () => {
    db = await freshDatabase(kind);
    queue = new JobQueue(new DrizzleJobStore(db.db), memoryLogger(), clock.now, false);
    sweeper = new RetentionSweeper({
      db: db.db,
      jobs: queue,
      settings,
      now: clock.now,
      logger: memoryLogger(),
      vacuum: kind === "embedded",
    });
    const d = db.db;
    await d.insert(s.users).values({ id: user, tenantId: "t", email: "r@example.com" });
    const session = (tag: string, expiresAt: Date) => ({
      id: randomUUID(),
      tenantId: "t",
      userId: user,
      tokenHash: tag,
      expiresAt,
    });
    await d
      .insert(s.sessions)
      .values([
        session("ended-1", ago(8 * DAY)),
        session("ended-2", ago(9 * DAY)),
        session("ended-3", ago(30 * DAY)),
        session("grace", ago(DAY)),
        session("live", ahead(DAY)),
      ]);
    const link = (tag: string, expiresAt: Date) => ({
      id: randomUUID(),
      tenantId: "t",
      siteId: "s",
      email: "r@example.com",
      tokenHash: tag,
      expiresAt,
    });
    await d.insert(s.magicLinks).values([link("ended", ago(8 * DAY)), link("live", ahead(600_000))]);
    const token = (tag: string, expiresAt: Date) => ({
      tokenHash: tag,
      kind: "link" as const,
      tenantId: "t",
      email: "o@example.com",
      expiresAt,
    });
    await d.insert(s.consoleTokens).values([token("ended", ago(8 * DAY)), token("live", ahead(DAY))]);
    await d.insert(s.organizations).values({ id: org, tenantId: "t", name: "Org", slug: "org" });
    const invitation = (email: string, status: "pending" | "accepted", expiresAt: Date, createdAt: Date) => ({
      id: randomUUID(),
      tenantId: "t",
      organizationId: org,
      email,
      role: "member",
      status,
      expiresAt,
      createdAt,
    });
    await d
      .insert(s.invitations)
      .values([
        invitation("expired@x", "pending", ago(8 * DAY), ago(15 * DAY)),
        invitation("accepted@x", "accepted", ahead(DAY), ago(8 * DAY)),
        invitation("live@x", "pending", ahead(DAY), ago(DAY)),
      ]);
    const confirmation = (tag: string, expiresAt: Date) => ({
      tokenHash: tag,
      tenantId: "t",
      siteId: "s",
      userId: user,
      listId: randomUUID(),
      email: "r@example.com",
      requestedFrom: "1.2.3.4",
      createdAt: new Date(expiresAt.getTime() - 7 * DAY),
      expiresAt,
    });
    await d
      .insert(s.newsletterConfirmations)
      .values([confirmation("ended", ago(8 * DAY)), confirmation("live", ahead(DAY))]);
    const standing = (status: string, pendingUntil: Date | null) => ({
      tenantId: "t",
      userId: user,
      listId: randomUUID(),
      siteId: "s",
      status,
      pendingUntil,
      updatedAt: ago(30 * DAY),
    });
    await d
      .insert(s.newsletterStandings)
      .values([standing("pending", ago(8 * DAY)), standing("pending", ahead(DAY)), standing("subscribed", null)]);
    await d.insert(s.grants).values([
      { tenantId: "t", userId: user, grant: "ended", expiresAt: ago(8 * DAY) },
      { tenantId: "t", userId: user, grant: "live", expiresAt: ahead(DAY) },
      { tenantId: "t", userId: user, grant: "forever", expiresAt: null },
    ]);
    const gift = (id: string, expiresAt: Date) => ({
      id,
      tenantId: "t",
      siteId: "s",
      gifterId: user,
      contentId: "a-1",
      expiresAt,
    });
    await d.insert(s.giftLinks).values([gift(endedGift, ago(8 * DAY)), gift(liveGift, ahead(DAY))]);
    const giftKey = rowsOf<{ id: number }>(
      await d.execute(
        sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('t', 's', '$gift', 'all') returning id`,
      ),
    )[0]!.id;
    for (const [giftId, reader] of [
      [endedGift, "a"],
      [endedGift, "b"],
      [endedGift, "c"],
      [liveGift, "a"],
    ])
      await d.insert(s.meterSeen).values({ meterId: giftKey, subject: giftId!, item: reader! });
    await d.insert(s.giftAllowances).values([
      { tenantId: "t", siteId: "s", gifterId: user, period: "2026-12", count: 1 },
      { tenantId: "t", siteId: "s", gifterId: user, period: "2027-03", count: 1 },
    ]);
    const checkout = (id: string, status: string, createdAt: Date) => ({
      id,
      tenantId: "t",
      siteId: "s",
      offer: "o",
      grant: "g",
      mode: "payment",
      status,
      createdAt,
    });
    await d
      .insert(s.checkoutSessions)
      .values([
        checkout("cs_open_old", "open", ago(8 * DAY)),
        checkout("cs_open_new", "open", ago(DAY)),
        checkout("cs_granted_old", "granted", ago(400 * DAY)),
      ]);
    await d.insert(s.checkoutEvents).values([
      { tenantId: "t", eventId: "evt_old", type: "x", processedAt: ago(8 * DAY) },
      { tenantId: "t", eventId: "evt_retry_window", type: "x", processedAt: ago(3 * DAY) },
    ]);
    const mail = (subject: string, status: "pending" | "sent" | "failed", createdAt: Date) => ({
      tenantId: "t",
      recipient: "r@example.com",
      subject,
      text: "token=secret",
      status,
      createdAt,
    });
    await d
      .insert(s.mailOutbox)
      .values([
        mail("sent-old", "sent", ago(8 * DAY)),
        mail("failed-old", "failed", ago(8 * DAY)),
        mail("sent-new", "sent", ago(DAY)),
        mail("pending-old", "pending", ago(8 * DAY)),
      ]);
    const audit = (target: string, at: Date) => ({ at, actor: "operator", action: "x", target, summary: "" });
    await d.insert(s.auditLog).values([audit("old", ago(366 * DAY)), audit("new", ago(364 * DAY))]);
    const conflict = (value: string, createdAt: Date) => ({
      id: randomUUID(),
      tenantId: "t",
      kind: "email" as const,
      userId: user,
      collidingUserId: user,
      value,
      createdAt,
    });
    await d.insert(s.identityConflicts).values([conflict("old", ago(366 * DAY)), conflict("new", ago(DAY))]);
    const job = (key: string, state: "dead" | "queued", runAt: Date) => ({
      kind: "k",
      key,
      state,
      runAt,
      createdAt: runAt,
    });
    await d
      .insert(s.jobs)
      .values([
        job("dead-old", "dead", ago(366 * DAY)),
        job("dead-new", "dead", ago(DAY)),
        job("queued-old", "queued", ago(400 * DAY)),
      ]);
    const budget = (subject: string, expiresAt: Date) => ({
      tenantId: "t",
      budget: "sign_in:mailbox",
      subject,
      windowStart: expiresAt.getTime() - 600_000,
      spent: 1,
      expiresAt,
    });
    await d
      .insert(s.mailBudget)
      .values([budget("ended", ago(60_000)), budget("ended-long-ago", ago(30 * DAY)), budget("open", ahead(60_000))]);
    await d.insert(s.recommendationUsage).values([
      { tenantId: "t", period: "2025-12", calls: 1 },
      { tenantId: "t", period: "2026-04", calls: 1 },
    ]);
    const change = (subject: string, createdAt: Date) => ({
      topic: "site" as const,
      tenantId: "t",
      subject,
      createdAt,
    });
    await d
      .insert(s.changeLog)
      .values([change("old-1", ago(2 * DAY)), change("old-2", ago(61 * 60_000)), change("recent", ago(59 * 60_000))]);
  }, 60_000);
  afterAll(async () => {
    await db.drop();
  }, 60_000);

  it("sweeps every ended row, a small batch at a time, and keeps the live ones", async () => {
    const counts = await sweeper.sweep(NOW);
    expect(counts.sessions).toBe(3);
    expect(await left(sql`select token_hash as k from sessions`)).toEqual(["grace", "live"]);
    expect(await left(sql`select token_hash as k from magic_links`)).toEqual(["live"]);
    expect(await left(sql`select token_hash as k from console_tokens`)).toEqual(["live"]);
    expect(await left(sql`select email as k from invitations`)).toEqual(["live@x"]);
    expect(await left(sql`select token_hash as k from newsletter_confirmations`)).toEqual(["live"]);
    expect(await left(sql`select coalesce(pending_until::text, status) as k from newsletter_standings`)).toHaveLength(
      2,
    );
    expect(await left(sql`select status as k from newsletter_standings where status = 'subscribed'`)).toEqual([
      "subscribed",
    ]);
    expect(await left(sql`select "grant" as k from grants`)).toEqual(["forever", "live"]);
    expect(await left(sql`select id::text as k from gift_links`)).toEqual([liveGift]);
    expect(await left(sql`select subject as k from meter_seen`)).toEqual([liveGift]);
    expect(await left(sql`select period as k from gift_allowances`)).toEqual(["2027-03"]);
    expect(await left(sql`select id as k from checkout_sessions`)).toEqual(["cs_granted_old", "cs_open_new"]);
    expect(await left(sql`select event_id as k from checkout_events`)).toEqual(["evt_retry_window"]);
    expect(await left(sql`select subject as k from mail_outbox`)).toEqual(["pending-old", "sent-new"]);
    expect(await left(sql`select target as k from audit_log`)).toEqual(["new"]);
    expect(await left(sql`select value as k from identity_conflicts`)).toEqual(["new"]);
    expect(await left(sql`select key as k from jobs`)).toEqual(["dead-new", "queued-old"]);
    expect(await left(sql`select period as k from recommendation_usage`)).toEqual(["2026-04"]);
    expect(await left(sql`select subject as k from change_log`)).toEqual(["recent"]);
    // A budget's window is read only while it lasts: gone as soon as it ended.
    expect(await left(sql`select subject as k from mail_budget`)).toEqual(["open"]);
  });

  it("keeps the newest change-log row however old, so a starting process knows where the log is", async () => {
    expect(await sweeper.sweep(NOW + 30 * DAY)).not.toHaveProperty("change_log");
    expect(await left(sql`select subject as k from change_log`)).toEqual(["recent"]);
  });

  it("sweeps a meter period's counts and seen sets once it ended everywhere plus the grace, and keeps the current one", async () => {
    const key = async (period: string) =>
      rowsOf<{ id: number }>(
        await db.db.execute(
          sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('t', 's', 'paywall', ${period}) returning id`,
        ),
      )[0]!.id;
    // March 2027 is current; February ended on the 1st, 14 days ago; the week of 8 March has not
    // ended everywhere yet (15 March, 14:00 UTC): its rows stay.
    const ids = {
      old: await key("2027-02"),
      current: await key("2027-03"),
      recentWeek: await key("2027-W10"),
      oldDay: await key("2027-03-01"),
      forever: await key("all"),
    };
    for (const id of Object.values(ids)) {
      for (const subject of ["r1", "r2", "r3"]) {
        await db.db.insert(s.meterCounts).values({ meterId: id, subject, count: 1 });
        await db.db.insert(s.meterSeen).values({ meterId: id, subject, item: "a-1" });
      }
    }
    await sweeper.sweep(NOW);
    const kept = [ids.current, ids.recentWeek, ids.forever].sort((a, b) => a - b).map(String);
    expect(await left(sql`select distinct meter_id::text as k from meter_counts`)).toEqual(kept.sort());
    expect(
      await left(
        sql`select distinct meter_id::text as k from meter_seen where meter_id <> all(select id from meter_keys where meter = '$gift')`,
      ),
    ).toEqual(kept.sort());
    expect(await left(sql`select period as k from meter_keys where meter = 'paywall'`)).toEqual(
      ["2027-03", "2027-W10", "all"].sort(),
    );
  });

  it("keeps a meter's past periods as long as its own retainDays says, longer or shorter than the default", async () => {
    const key = async (meter: string, period: string) =>
      rowsOf<{ id: number }>(
        await db.db.execute(
          sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('t', 'own', ${meter}, ${period}) returning id`,
        ),
      )[0]!.id;
    // February ended 14 days ago: kept by a 60-day meter. The week of 1 March ended everywhere
    // a week ago less two hours: within the default 7 days, swept by a 0-day meter.
    const long = await key("archive", "2027-02");
    const short = await key("weekly", "2027-W09");
    for (const id of [long, short]) await db.db.insert(s.meterCounts).values({ meterId: id, subject: "r1", count: 1 });
    await new RetentionSweeper({
      db: db.db,
      jobs: { register: () => {}, enqueue: async () => {} },
      settings,
      now: clock.now,
      logger: memoryLogger(),
      vacuum: false,
      meterRetention: (tenantId, siteId, meter) =>
        tenantId === "t" && siteId === "own" ? { archive: 60, weekly: 0 }[meter] : undefined,
    }).sweep(NOW);
    expect(await left(sql`select meter as k from meter_keys where site_id = 'own'`)).toEqual(["archive"]);
    expect(await left(sql`select meter_id::text as k from meter_counts where meter_id in (${long}, ${short})`)).toEqual(
      [String(long)],
    );
  });

  it("keeps a site's live and staged documents and its newest versions, and sweeps older ones", async () => {
    await db.db.insert(s.tenants).values({ id: "docs" });
    await db.db.insert(s.sites).values({ tenantId: "docs", id: "news", liveVersion: 2, previewVersion: 6 });
    for (let version = 1; version <= 6; version++) {
      await db.db.insert(s.siteDocuments).values({
        tenantId: "docs",
        siteId: "news",
        version,
        stage: version === 6 ? "preview" : "live",
        document: {},
      });
    }
    await new RetentionSweeper({
      db: db.db,
      jobs: { register: () => {}, enqueue: async () => {} },
      settings: { ...settings, documentVersions: 3 },
      now: clock.now,
      logger: memoryLogger(),
      vacuum: false,
    }).sweep(NOW);
    expect(await left(sql`select version::text as k from site_documents where tenant_id = 'docs'`)).toEqual([
      "2",
      "4",
      "5",
      "6",
    ]);
  });

  it("sweeps a version past the newest 10 once it is SVC_RETAIN_DOCUMENT_DAYS old, and keeps the live one", async () => {
    await db.db.insert(s.tenants).values({ id: "aged" });
    await db.db.insert(s.sites).values({ tenantId: "aged", id: "news", liveVersion: 3 });
    // Versions 1-14 are 40 days old, 15-20 a day old: the newest 10 (11-20) stay whatever their
    // age, the live one (3) stays, the other old ones go.
    for (let version = 1; version <= 20; version++) {
      await db.db.insert(s.siteDocuments).values({
        tenantId: "aged",
        siteId: "news",
        version,
        stage: "live",
        document: {},
        createdAt: ago((version <= 14 ? 40 : 1) * DAY),
      });
    }
    const sweep = (documentDays: number, documentVersions: number) =>
      new RetentionSweeper({
        db: db.db,
        jobs: { register: () => {}, enqueue: async () => {} },
        settings: { ...settings, documentDays, documentVersions },
        now: clock.now,
        logger: memoryLogger(),
        vacuum: false,
      }).sweep(NOW);
    const versions = async () =>
      (await left(sql`select version::text as k from site_documents where tenant_id = 'aged'`))
        .map(Number)
        .sort((a, b) => a - b);
    // 60 days: none is old enough; within the cap of 200, all stay.
    await sweep(60, 200);
    expect(await versions()).toHaveLength(20);
    await sweep(30, 200);
    expect(await versions()).toEqual([3, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    // The cap still bounds young versions: at most 5 kept besides the live one.
    await sweep(30, 5);
    expect(await versions()).toEqual([3, 16, 17, 18, 19, 20]);
  });

  it("runs as a job of the queue, owed by the timer", async () => {
    await db.db
      .insert(s.auditLog)
      .values({ at: ago(400 * DAY), actor: "o", action: "x", target: "by-job", summary: "" });
    await queue.enqueue(RETENTION_JOB, [{ key: "all", payload: null }]);
    expect(await queue.runDue()).toBe(1);
    expect(await left(sql`select target as k from audit_log where target = 'by-job'`)).toEqual([]);
  });

  it.if(kind === "embedded")("vacuums and analyses on the embedded store, where autovacuum never runs", async () => {
    const estimate = async (table: string) =>
      Number(
        rowsOf<{ n: number }>(
          await db.db.execute(sql`select reltuples as n from pg_class where relname = ${table}`),
        )[0]!.n,
      );
    // Never analysed, a table's estimate is -1. Each sweep vacuums the tables it swept (every
    // session has ended by now); every table once an hour after start (the sweep 30 days on did:
    // users holds its one reader).
    expect(await estimate("sessions")).toBe(0);
    expect(await estimate("users")).toBe(1);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { rowsOf } from "../../db/client";
import { Outbox, smtpTransport } from "../../src/mail/outbox";
import { SealedText } from "../../src/mail/sealed-text";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { manualClock, memoryLogger } from "../helpers/harness";
import { startSmtpServer } from "../helpers/smtp";
import { until } from "../helpers/wait";

type Smtp = Awaited<ReturnType<typeof startSmtpServer>>;

const sealer = new SealedText("test-secret-test-secret-test-secret-0123", "mail-outbox");

/** The real database, with a count of the claims (UPDATEs) the outbox makes through it. */
function countingClaims(db: Db) {
  const counter = { updates: 0 };
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === "update") counter.updates++;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: wrapped as Db, counter };
}

const mail = (to: string) => ({ tenantId: "default", to, subject: "Hello", text: `Hello ${to}` });
/** The clock, with a count of its reads: every timer tick reads it, so tests wait on ticks, not on time. */
function countingReads(clock: ReturnType<typeof manualClock>) {
  const reads = { n: 0 };
  return {
    reads,
    now: () => {
      reads.n++;
      return clock.now();
    },
  };
}

describe.each(storeKinds)("outbox drainer (%s store)", (kind) => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let smtp: Smtp;
  beforeAll(async () => {
    database = await freshDatabase(kind);
    smtp = await startSmtpServer();
  }, 60_000);
  afterAll(async () => {
    await smtp.stop();
    await database.drop();
  });

  test("a store of its own: idle ticks cost no query, a refused mail is retried when due and not before", async () => {
    const clock = manualClock();
    const { reads, now } = countingReads(clock);
    const { db, counter } = countingClaims(database.db);
    const outbox = new Outbox(db, smtpTransport(smtp.url, "news@example.com"), memoryLogger(), now, false, sealer);
    /** Waits until the timer has ticked `n` more times (each tick reads the clock). */
    const ticks = (n: number) => {
      const from = reads.n;
      return until(() => reads.n >= from + n, 3_000);
    };
    outbox.start(10);
    try {
      // The first tick drains (nothing is known yet), then the outbox is quiet.
      expect(await until(() => counter.updates >= 1, 3_000)).toBe(true);
      await outbox.drain(); // the first drain, settled (or one more): it leaves the outbox quiet
      const idle = counter.updates;
      expect(await ticks(15)).toBe(true);
      expect(counter.updates).toBe(idle);

      smtp.refuse(1);
      const before = smtp.received.length;
      await outbox.enqueue(mail("retry@example.com"));
      await outbox.drain();
      expect(smtp.received.length).toBe(before);
      // The refusal set the row's next attempt 2 s ahead (first backoff): ticks wait for it.
      const afterFailure = counter.updates;
      clock.advance(1_900);
      expect(await ticks(10)).toBe(true);
      expect(counter.updates).toBe(afterFailure);
      expect(smtp.received.length).toBe(before);
      clock.advance(200);
      expect(await until(() => smtp.received.length === before + 1)).toBe(true);
      expect(smtp.received.at(-1)?.to).toEqual(["retry@example.com"]);

      // An enqueue wakes a quiet outbox at once.
      await outbox.enqueue(mail("later@example.com"));
      expect(await until(() => smtp.received.length === before + 2)).toBe(true);
    } finally {
      await outbox.stop();
    }
  });

  test("a shared store: every tick looks for due rows (another process may leave some)", async () => {
    const clock = manualClock();
    const { db, counter } = countingClaims(database.db);
    const outbox = new Outbox(db, smtpTransport(smtp.url, "news@example.com"), memoryLogger(), clock.now, true, sealer);
    outbox.start(10);
    try {
      expect(await until(() => counter.updates >= 1)).toBe(true);
      const first = counter.updates;
      expect(await until(() => counter.updates >= first + 3)).toBe(true);
    } finally {
      await outbox.stop();
    }
  });

  test("stores bodies sealed: the table never holds a body's text in clear, and the mail goes out in clear", async () => {
    const clock = manualClock();
    const smtpOff = { kind: "smtp" as const, send: async () => Promise.reject(new Error("held for the test")) };
    const held = new Outbox(database.db, smtpOff, memoryLogger(), clock.now, false, sealer);
    const secretLink = "https://id.example/v1/id/magic-link?token=tok-sealed-0123456789";
    await held.enqueue({
      tenantId: "default",
      to: "sealed@example.com",
      subject: "Link",
      text: secretLink,
      html: `<a>${secretLink}</a>`,
    });
    await held.stop();
    const stored = rowsOf<{ text: string; html: string | null }>(
      await database.db.execute(sql`select text, html from mail_outbox where recipient = 'sealed@example.com'`),
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]?.text).not.toContain("tok-sealed");
    expect(stored[0]?.html).not.toContain("tok-sealed");
    expect(stored[0]?.text.startsWith("sealed:v1:")).toBe(true);
    // Another process with the same SVC_SECRET opens it; one with another secret cannot.
    expect(sealer.open(stored[0]?.text as string)).toBe(secretLink);
    expect(() =>
      new SealedText("another-secret-another-secret-0123456", "mail-outbox").open(stored[0]?.text as string),
    ).toThrow();

    clock.advance(10 * 60_000);
    const sender = new Outbox(
      database.db,
      smtpTransport(smtp.url, "news@example.com"),
      memoryLogger(),
      clock.now,
      false,
      sealer,
    );
    await sender.drain();
    await sender.stop();
    const got = smtp.received.find((m) => m.to.includes("sealed@example.com"));
    expect(got?.text).toContain("tok-sealed-0123456789");
  });
  test("a drain never rejects, even when the store fails after a refused mail; no drain starts after stop", async () => {
    const clock = manualClock();
    const logger = memoryLogger();
    // The store refuses every UPDATE after the first (the claim): the retry cannot be recorded.
    let updates = 0;
    const failing = new Proxy(database.db, {
      get(target, prop, receiver) {
        if (prop === "update" && ++updates > 1) throw new Error("the store went away");
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Db;
    // Nothing listens on port 9 here: the SMTP connection is refused.
    const refusing = smtpTransport("smtp://127.0.0.1:9", "news@example.com");
    const outbox = new Outbox(failing, refusing, logger, clock.now, false, sealer);
    await outbox.enqueueIn(database.db, mail("gone@example.com"));
    expect(await outbox.drain()).toBe(0);
    expect(logger.lines.some((l) => l.includes("outbox retry not recorded"))).toBe(true);
    // The claim's deadline makes the row due again without the failed write.
    const [row] = rowsOf<{ status: string }>(
      await database.db.execute(sql`select status from mail_outbox where recipient = 'gone@example.com'`),
    );
    expect(row?.status).toBe("sending");
    await outbox.stop();
    const before = updates;
    outbox.kick();
    await outbox.drain();
    expect(updates).toBe(before);
  });
});

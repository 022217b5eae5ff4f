import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Db } from "../../db/client";
import { Outbox, smtpTransport } from "../../src/mail/outbox";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { manualClock, memoryLogger } from "../helpers/harness";
import { startSmtpServer } from "../helpers/smtp";

type Smtp = Awaited<ReturnType<typeof startSmtpServer>>;

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
const until = async (check: () => boolean, ms = 3_000) => {
  const start = Date.now();
  while (!check() && Date.now() - start < ms) await Bun.sleep(10);
  return check();
};

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
    const { db, counter } = countingClaims(database.db);
    const outbox = new Outbox(db, smtpTransport(smtp.url, "news@example.com"), memoryLogger(), clock.now, false);
    outbox.start(10);
    try {
      // The first tick drains (nothing is known yet), then the outbox is quiet.
      expect(await until(() => counter.updates >= 1)).toBe(true);
      await Bun.sleep(50);
      const idle = counter.updates;
      await Bun.sleep(150);
      expect(counter.updates).toBe(idle);

      smtp.refuse(1);
      const before = smtp.received.length;
      await outbox.enqueue(mail("retry@example.com"));
      await outbox.drain();
      expect(smtp.received.length).toBe(before);
      // The refusal set the row's next attempt 2 s ahead (first backoff): ticks wait for it.
      const afterFailure = counter.updates;
      clock.advance(1_900);
      await Bun.sleep(100);
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
    const outbox = new Outbox(db, smtpTransport(smtp.url, "news@example.com"), memoryLogger(), clock.now, true);
    outbox.start(10);
    try {
      expect(await until(() => counter.updates >= 1)).toBe(true);
      const first = counter.updates;
      expect(await until(() => counter.updates >= first + 3)).toBe(true);
    } finally {
      await outbox.stop();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { smtpTransport } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { consoleClient } from "../helpers/console";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { roomyMailBudgets } from "../helpers/mail-budgets";
import { afterA, balancedOrder, mannWhitneyU, seededRandom, timePairs } from "../helpers/rank-test";
import { startSmtpServer } from "../helpers/smtp";
import { type NewsletterWorld, newsletterWorld } from "../newsletters/fixture";

/**
 * Answers whose time would tell whether an address exists (issue 36, defect 7: console sign-in
 * took 5.5-15.7 ms for a console user against 2.5-3.9 ms for anyone else, 29-30 of 30 pairs;
 * subscribe answered faster for an address already on a list). Both requests now do the same
 * work whatever the address and hand the rest to a job, so the two samples come from one
 * distribution: a rank test over 30 pairs must not tell them apart.
 *
 * Not a performance assertion: no time is compared with a number. The calls are timed in a
 * seeded shuffled order, each kind following each kind equally often (`balancedOrder`), after the
 * previous call's background work has finished, so load, drift and what a call leaves behind fall
 * on both sides alike; the test fails only when the rank test puts the difference below a
 * 0.01% chance. The reported defect's timings differed at well under one in a million (the old
 * subscribe path: p = 2.3e-6 here), so this still catches it; at 0.1% the four comparisons of a
 * store ran into a chance failure in CI (a console user 0.6 ms faster, p = 9e-4, 2026-11-26).
 */
const PAIRS = 30;
const ALPHA = 0.0001;

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function verdict(what: string, a: number[], b: number[]) {
  const { p, z } = mannWhitneyU(a, b);
  const summary = `${what}: member median ${median(a).toFixed(2)} ms, other median ${median(b).toFixed(2)} ms, z ${z.toFixed(2)}, p ${p.toExponential(2)}`;
  if (process.env.TIMING_DEBUG) console.log(summary);
  return { distinguishable: p < ALPHA, summary };
}

/**
 * Neither the wall time (what a caller sees) nor the CPU time the process spent (the work done,
 * which load from other processes disturbs far less) tells the two kinds of address apart.
 */
function expectSameDistribution(samples: Awaited<ReturnType<typeof timePairs>>) {
  if (process.env.TIMING_DEBUG) {
    const { a, b } = samples.after;
    console.log(
      `any call after a member's: median ${median(a).toFixed(2)} ms (${a.length}), after another's: ${median(b).toFixed(2)} ms (${b.length})`,
    );
  }
  for (const [what, a, b] of [
    ["wall time", samples.a, samples.b],
    ["CPU time", samples.cpu.a, samples.cpu.b],
  ] as const) {
    const found = verdict(what, a, b);
    expect(found).toEqual({ distinguishable: false, summary: found.summary });
  }
}

/** Rows per table, for the tables a request of this kind could write. */
async function rowCounts(h: Harness, tables: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) {
    const [row] = rowsOf<{ n: number }>(
      await h.deps.database.db.execute(sql.raw(`select count(*)::int as n from ${table}`)),
    );
    out[table] = row?.n ?? 0;
  }
  return out;
}

/**
 * What one request writes itself, per table, with the queue held (its kick does nothing, so the
 * handed-off work waits until the test runs it): the same for every address, or the time could
 * differ with it.
 */
async function writesOf(h: Harness, tables: readonly string[], call: () => Promise<unknown>) {
  const before = await rowCounts(h, tables);
  await call();
  const after = await rowCounts(h, tables);
  return Object.fromEntries(tables.map((t) => [t, (after[t] ?? 0) - (before[t] ?? 0)]));
}

/**
 * Holds the job queue's kicks while `fn` runs; the handed-off jobs then run when the test says.
 * The queue's once-a-second pass is stopped for the whole describe (`beforeAll`): on a loaded
 * machine it ran them between two of the test's counts.
 */
async function withQueueHeld<T>(h: Harness, fn: () => Promise<T>): Promise<T> {
  const kick = h.deps.jobs.kick;
  h.deps.jobs.kick = () => {};
  try {
    return await fn();
  } finally {
    h.deps.jobs.kick = kick;
  }
}

describe("the rank test itself", () => {
  it("counts U as the pairs where the first sample is larger (ties as half), and finds a plain shift", () => {
    const a = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
    const b = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8];
    let pairs = 0;
    for (const x of a) for (const y of b) pairs += x > y ? 1 : x === y ? 0.5 : 0;
    expect(mannWhitneyU(a, b).u).toBe(pairs);
    // Wholly separated samples of 5: scipy.stats.mannwhitneyu gives p = 0.01219 (continuity-corrected).
    expect(mannWhitneyU([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p).toBeCloseTo(0.01219, 4);
    const shifted = Array.from({ length: PAIRS }, (_, i) => 2.5 + (i % 7) * 0.2);
    const slower = shifted.map((x) => x + 3);
    expect(mannWhitneyU(slower, shifted).p).toBeLessThan(ALPHA);
    expect(mannWhitneyU(shifted, [...shifted].reverse()).p).toBeCloseTo(1, 6);
  });

  it("times the two kinds in an order where each follows an `a` as often as the other, so carry-over falls on both", () => {
    // A model: a call costs 0.9 ms more after an `a`, whatever it is (what a console user's sign-in leaves behind).
    const costs = (order: readonly ("a" | "b")[]) => {
      const out = { a: [] as number[], b: [] as number[] };
      for (const [i, which] of order.entries()) out[which].push(5 + (order[i - 1] === "a" ? 0.9 : 0));
      return out;
    };
    for (const seed of [36, 1, 2]) {
      const order = balancedOrder(PAIRS, seed);
      expect(order.filter((x) => x === "a")).toHaveLength(PAIRS);
      expect(order.filter((x) => x === "b")).toHaveLength(PAIRS);
      for (const lag of [1, 2, 3]) {
        const after = afterA(order, lag);
        expect(Math.abs(after.a - after.b)).toBeLessThanOrEqual(1);
      }
      const { a, b } = costs(order);
      expect(mannWhitneyU(a, b).p).toBeGreaterThan(0.5);
    }
    expect(balancedOrder(PAIRS, 36)).toEqual(balancedOrder(PAIRS, 36));
    expect(() => balancedOrder(0, 36)).toThrow("balancedOrder needs pairs >= 1");
    // Pairs in random order (this helper's order until 2026-11-28): a `b` follows an `a` about
    // three times as often as an `a` does, and the carry-over alone tells them apart.
    const random = seededRandom(36);
    const pairs = Array.from({ length: 200 }, () => (random() < 0.5 ? ["a", "b"] : ["b", "a"]) as ("a" | "b")[]).flat();
    const after = afterA(pairs, 1);
    expect(after.b).toBeGreaterThan(2 * after.a);
    const { a, b } = costs(pairs);
    expect(mannWhitneyU(a, b).p).toBeLessThan(ALPHA);
  });
});

describe("timePairs", () => {
  it("times every call of each kind once, in the balanced order, with or without a warm-up", async () => {
    for (const warmup of [0, 2]) {
      const calls: string[] = [];
      const samples = await timePairs({
        pairs: 6,
        warmup,
        a: async () => void calls.push("a"),
        b: async () => void calls.push("b"),
        settle: async () => {},
      });
      expect(calls.slice(2 * warmup)).toEqual(balancedOrder(6, 36));
      expect([samples.a.length, samples.b.length, samples.cpu.a.length, samples.cpu.b.length]).toEqual([6, 6, 6, 6]);
      // The first timed call has a call before it only after a warm-up.
      expect(samples.after.a.length + samples.after.b.length).toBe(warmup === 0 ? 11 : 12);
    }
  });
});

describe.each(storeKinds)("answers that do not tell who exists, by their time (%s store)", (kind) => {
  describe("console sign-in", () => {
    let h: Harness;
    let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      smtp = await startSmtpServer();
      const db = await freshDatabase(kind);
      drop = db.drop;
      h = await startHarness(db, {
        mailTransport: smtpTransport(smtp.url, "Console <console@example.com>"),
        mailBudgets: roomyMailBudgets,
      });
      await h.deps.jobs.stop();
      await seedSite(h, "news", basicDocument());
      expect(
        (await h.admin("POST", "/admin/tenants/default/console-users", { email: "ada@example.com", role: "admin" }))
          .status,
      ).toBe(200);
    }, 120_000);
    afterAll(async () => {
      await h.stop();
      await smtp.stop();
      await drop();
    }, 60_000);

    it("writes the same rows for a console user as for anyone else; the link and its mail come after", async () => {
      const client = consoleClient(h);
      expect((await client.get("/console/sign-in")).status).toBe(200);
      const tables = ["console_tokens", "mail_outbox", "jobs"];
      const mailed = smtp.received.length;
      const ask = (email: string) => async () =>
        expect((await client.post("/console/sign-in", { email })).status).toBe(200);
      const [member, other] = await withQueueHeld(h, async () => [
        await writesOf(h, tables, ask("ada@example.com")),
        await writesOf(h, tables, ask("nobody@example.com")),
      ]);
      expect(member).toEqual(other);
      expect(member).toEqual({ console_tokens: 0, mail_outbox: 0, jobs: 1 });
      const later = await writesOf(h, tables, async () => {
        await h.deps.jobs.runDue();
        await h.deps.jobs.runDue();
      });
      // The handed-off work: a link and a mail for the console user, nothing for the other; both jobs done.
      expect(later).toEqual({ console_tokens: 1, mail_outbox: 1, jobs: -2 });
      await h.deps.outbox.drain();
      expect((await smtp.waitFor(mailed + 1)).slice(mailed).map((m) => m.to)).toEqual([["ada@example.com"]]);
    }, 60_000);

    it("takes as long for a console user as for anyone else, over 30 pairs", async () => {
      const client = consoleClient(h);
      expect((await client.get("/console/sign-in")).status).toBe(200);
      const ask = async (email: string) => {
        const res = await client.post("/console/sign-in", { email });
        expect(res.status).toBe(200);
      };
      const before = smtp.received.length;
      const samples = await timePairs({
        pairs: PAIRS,
        a: () => ask("ada@example.com"),
        b: () => ask("nobody@example.com"),
        settle: async () => {
          await h.deps.jobs.runDue();
          await h.deps.jobs.runDue();
          await h.deps.outbox.drain();
        },
      });
      // The console user was mailed every time, the stranger never.
      await smtp.waitFor(before + PAIRS + 5);
      const sent = smtp.received.slice(before);
      expect(sent.filter((m) => m.to.includes("nobody@example.com"))).toHaveLength(0);
      expect(sent.filter((m) => m.to.includes("ada@example.com")).length).toBe(PAIRS + 5);
      expectSameDistribution(samples);
    }, 300_000);
  });

  describe("anonymous subscribe", () => {
    let w: NewsletterWorld;
    let daily = "";

    beforeAll(async () => {
      w = await newsletterWorld(kind, { vendor: false, mailBudgets: roomyMailBudgets });
      await w.h.deps.jobs.stop();
      daily = (await w.lists()).daily;
      // The member: already subscribed to the double opt-in list the requests name.
      const held = await w.person("held@example.com");
      await w.h.deps.newsletters.store.write(
        "default",
        held.userId,
        [{ listId: daily, siteId: "news", status: "subscribed", pendingUntil: null }],
        w.h.clock.now(),
      );
    }, 120_000);
    afterAll(() => w.stop(), 60_000);

    it("writes the same rows for an address already on the list as for a stranger; standings and mail come after", async () => {
      const tables = ["users", "newsletter_standings", "newsletter_confirmations", "mail_outbox", "jobs"];
      const subscribe = (email: string) => async () => {
        const res = await w.h.request("PUT", "/v1/newsletters/subscriptions", {
          headers: { "x-svc-site-id": "news" },
          body: { subscribed: [daily], email },
        });
        expect(res.status).toBe(202);
      };
      const [member, other] = await withQueueHeld(w.h, async () => [
        await writesOf(w.h, tables, subscribe("held@example.com")),
        await writesOf(w.h, tables, subscribe("first-time@example.com")),
      ]);
      expect(member).toEqual(other);
      expect(member).toEqual({
        users: 0,
        newsletter_standings: 0,
        newsletter_confirmations: 0,
        mail_outbox: 0,
        jobs: 1,
      });
      const mailed = w.smtp.received.length;
      const later = await writesOf(w.h, tables, () => w.handedOff());
      // The stranger becomes a user with a pending standing and one confirmation; the subscriber, nothing.
      expect(later).toEqual({
        users: 1,
        newsletter_standings: 1,
        newsletter_confirmations: 1,
        mail_outbox: 1,
        jobs: -2,
      });
      await w.h.deps.outbox.drain();
      expect((await w.smtp.waitFor(mailed + 1)).slice(mailed).map((m) => m.to)).toEqual([["first-time@example.com"]]);
    }, 60_000);

    it("takes as long for an address already on the list as for a stranger, over 30 pairs", async () => {
      const subscribe = async (email: string) => {
        const res = await w.h.request("PUT", "/v1/newsletters/subscriptions", {
          headers: { "x-svc-site-id": "news" },
          body: { subscribed: [daily], email },
        });
        expect(res.status).toBe(202);
        await res.arrayBuffer();
      };
      const before = w.smtp.received.length;
      const samples = await timePairs({
        pairs: PAIRS,
        a: () => subscribe("held@example.com"),
        b: () => subscribe("stranger@example.com"),
        settle: async () => {
          await w.handedOff();
          await w.h.deps.outbox.drain();
        },
      });
      // The stranger got a confirmation each time (still pending); the subscriber none.
      await w.smtp.waitFor(before + PAIRS + 5);
      const sent = w.smtp.received.slice(before);
      expect(sent.filter((m) => m.to.includes("held@example.com"))).toHaveLength(0);
      expect(sent.filter((m) => m.to.includes("stranger@example.com")).length).toBe(PAIRS + 5);
      expectSameDistribution(samples);
    }, 300_000);
  });
});

import { expect, it } from "bun:test";
import type { Db } from "../../db/client";
import { chargesOf, MAIL_BUDGETS, type MailBudgetRules } from "../../src/mail-budget/budgets";
import { MemoryMailBudgetStore } from "../../src/mail-budget/memory-store";
import { DrizzleMailBudgetStore, type MailBudgetStore, type Taken, type Tx } from "../../src/mail-budget/store";
import { storeContract } from "../helpers/store-contract";

const TINY: MailBudgetRules = {
  ...MAIL_BUDGETS,
  sign_in: [
    { scope: "mailbox", limit: 2, windowMs: 60_000 },
    { scope: "client", limit: 3, windowMs: 60_000 },
    { scope: "site", limit: 100, windowMs: 60_000, warnAt: 4 },
  ],
};

interface World {
  readonly store: MailBudgetStore;
  /** Runs `fn` in a transaction rolled back when it throws (memory: no transaction to run in). */
  readonly inTx: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
}

storeContract<World>(
  "the mail budget store",
  (_kind, db: Db | null) =>
    db === null
      ? { store: new MemoryMailBudgetStore(), inTx: (fn) => fn(null as unknown as Tx) }
      : { store: new DrizzleMailBudgetStore(db), inTx: (fn) => db.transaction(fn) },
  (world) => {
    /** A take in its own transaction, rolled back when refused (as MailBudget.spend does). */
    const take = (tenant: string, mailbox: string, client: string, at: number, mails = 1): Promise<Taken> =>
      world()
        .inTx(async (tx) => {
          const taken = await world().store.take(
            tx,
            tenant,
            chargesOf(
              "sign_in",
              [
                ["mailbox", mailbox, mails],
                ["client", client, mails],
                ["site", "news", mails],
              ],
              TINY,
            ),
            at,
          );
          if (taken.refused !== null) throw taken;
          return taken;
        })
        .catch((refused: Taken) => {
          if (refused?.refused === undefined) throw refused;
          return refused;
        });

    it("admits up to each limit in a window, refuses past it, and starts afresh in the next", async () => {
      const t = 60_000_000;
      expect((await take("t1", "a@x", "c1", t)).refused).toBeNull();
      expect((await take("t1", "a@x", "c2", t + 1)).refused).toBeNull();
      expect((await take("t1", "a@x", "c3", t + 2)).refused?.rule.scope).toBe("mailbox");
      // Another tenant's budgets are its own.
      expect((await take("t2", "a@x", "c1", t + 3)).refused).toBeNull();
      expect((await take("t1", "a@x", "c1", t + 60_000)).refused).toBeNull();
    });

    it("counts mails, not takes: a take of 2 spends a mailbox's whole budget of 2", async () => {
      const t = 90_000_000;
      expect((await take("t5", "two@x", "c1", t, 2)).refused).toBeNull();
      expect((await take("t5", "two@x", "c2", t)).refused?.rule.scope).toBe("mailbox");
      // A take past a limit by itself is refused whole, on an empty counter too.
      expect((await take("t5", "three@x", "c3", t, 3)).refused?.rule.scope).toBe("mailbox");
      expect((await take("t5", "three@x", "c3", t, 2)).refused).toBeNull();
    });

    it("reports the take that crosses a warning level, once", async () => {
      const t = 120_000_000;
      const crossed: number[] = [];
      for (let i = 0; i < 6; i++) crossed.push((await take("t3", `m${i}@x`, `c${i}`, t)).crossed.length);
      expect(crossed).toEqual([0, 0, 0, 1, 0, 0]);
    });

    it("never passes a limit when 30 takes race, and a refused take keeps nothing", async () => {
      const t = 180_000_000;
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => take("t4", "race@x", `c${i}`, t)));
      expect(results.filter((r) => r.refused === null)).toHaveLength(2);
      // A refused take put back the client counter it had raised: its full budget of 3 is left.
      const refusedClient = results.findLastIndex((r) => r.refused !== null);
      for (let i = 0; i < 3; i++) {
        expect((await take("t4", `fresh-${i}@x`, `c${refusedClient}`, t)).refused).toBeNull();
      }
      expect((await take("t4", "fresh-3@x", `c${refusedClient}`, t)).refused?.rule.scope).toBe("client");
    });

    it("prunes counters whose window has ended, and only those", async () => {
      const t = 240_000_000;
      await take("t6", "old@x", "c1", t);
      await take("t6", "new@x", "c1", t + 60_000);
      const pruned = await world().store.prune(t + 60_001);
      expect(pruned).toBeGreaterThan(0);
      expect(await world().store.prune(t + 60_001)).toBe(0);
      // The next window's counters were kept: new@x has one mail of 2 left in it.
      expect((await take("t6", "new@x", "c2", t + 60_000)).refused).toBeNull();
      expect((await take("t6", "new@x", "c3", t + 60_000)).refused?.rule.scope).toBe("mailbox");
    });
  },
);

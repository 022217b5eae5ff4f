import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import {
  type BudgetRule,
  chargesOf,
  MAIL_BUDGETS,
  type MailBudgetRules,
  mailboxOf,
  secondsLeftInWindow,
} from "../../src/mail-budget/budgets";
import { DrizzleMailBudgetStore } from "../../src/mail-budget/store";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";

describe("mailboxOf", () => {
  it.each([
    ["victim@example.com", "victim@example.com"],
    ["Victim+1@Example.COM", "victim@example.com"],
    ["  victim+a+b@example.com ", "victim@example.com"],
    ["victim@example.com.", "victim@example.com"],
    ["+tag@example.com", "+tag@example.com"],
    ["not-an-address", "not-an-address"],
  ])("counts %j as the mailbox %j", (address, mailbox) => {
    expect(mailboxOf(address)).toBe(mailbox);
  });
});

describe("chargesOf", () => {
  it("charges every rule of the kind whose scope the spend names, in mails", () => {
    const charges = chargesOf("confirmation", [
      ["mailbox", "m", 4],
      ["mailbox_list", "m/1", 1],
      ["mailbox_list", "m/2", 1],
      ["client", "c", 4],
      ["site", "s", 4],
    ]);
    // mailbox has two rules (hour and day), mailbox_list two subjects.
    expect(charges.map((c) => `${c.rule.scope}:${c.subject}:${c.amount}`).sort()).toEqual(
      ["client:c:4", "mailbox:m:4", "mailbox:m:4", "mailbox_list:m/1:1", "mailbox_list:m/2:1", "site:s:4"].sort(),
    );
  });

  it("refuses a spend that leaves one of the kind's budgets out", () => {
    expect(() => chargesOf("invitation", [["mailbox", "m", 1]])).toThrow("spends nothing from its inviter budget");
  });

  it("gives the seconds to the end of the window, at least 1", () => {
    const rule: BudgetRule = { scope: "client", limit: 1, windowMs: 3_600_000 };
    expect(secondsLeftInWindow(rule, 7_200_000)).toBe(3600);
    expect(secondsLeftInWindow(rule, 7_200_000 + 3_599_999)).toBe(1);
  });
});

const TINY: MailBudgetRules = {
  ...MAIL_BUDGETS,
  sign_in: [
    { scope: "mailbox", limit: 2, windowMs: 60_000 },
    { scope: "client", limit: 3, windowMs: 60_000 },
    { scope: "site", limit: 100, windowMs: 60_000, warnAt: 4 },
  ],
};

describe.each(storeKinds)("DrizzleMailBudgetStore (%s store)", (kind: StoreKind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let store: DrizzleMailBudgetStore;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    store = new DrizzleMailBudgetStore(db.db);
  }, 60_000);
  afterAll(() => db.drop(), 60_000);

  /** A take in its own transaction, rolled back when refused (as MailBudget.spend does). */
  const take = (tenant: string, mailbox: string, client: string, at: number) =>
    db.db
      .transaction(async (tx) => {
        const taken = await store.take(
          tx,
          tenant,
          chargesOf(
            "sign_in",
            [
              ["mailbox", mailbox, 1],
              ["client", client, 1],
              ["site", "news", 1],
            ],
            TINY,
          ),
          at,
        );
        if (taken.refused !== null) throw taken;
        return taken;
      })
      .catch((refused: Awaited<ReturnType<typeof store.take>>) => {
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

  it("reports the take that crosses a warning level, once", async () => {
    const t = 120_000_000;
    const crossed: number[] = [];
    for (let i = 0; i < 6; i++) crossed.push((await take("t3", `m${i}@x`, `c${i}`, t)).crossed.length);
    expect(crossed).toEqual([0, 0, 0, 1, 0, 0]);
  });

  it("never passes a limit when 30 takes race, and a refused take's transaction keeps nothing", async () => {
    const t = 180_000_000;
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => take("t4", "race@x", `c${i}`, t)));
    expect(results.filter((r) => r.refused === null)).toHaveLength(2);
    // A refused take rolled back the client counter it had raised: its full budget of 3 is left.
    const refusedClient = results.findLastIndex((r) => r.refused !== null);
    for (let i = 0; i < 3; i++) {
      expect((await take("t4", `fresh-${i}@x`, `c${refusedClient}`, t)).refused).toBeNull();
    }
    expect((await take("t4", "fresh-3@x", `c${refusedClient}`, t)).refused?.rule.scope).toBe("client");
    const pruned = await store.prune(t + 120_000);
    expect(pruned).toBeGreaterThan(0);
    expect(await store.prune(t + 120_000)).toBe(0);
  });
});

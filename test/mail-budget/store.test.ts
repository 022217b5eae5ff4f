import { describe, expect, it } from "bun:test";
import { type BudgetRule, chargesOf, mailboxOf, secondsLeftInWindow } from "../../src/mail-budget/budgets";

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

// The stores themselves: test/stores/mail-budget-store.test.ts (memory twin, embedded, server).

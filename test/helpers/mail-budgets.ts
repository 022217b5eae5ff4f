import type { MailBudgetRules } from "../../src/mail-budget/budgets";
import { MAIL_BUDGETS } from "../../src/mail-budget/budgets";

/** The default budgets with every limit set out of reach: for files that test something else. */
export const roomyMailBudgets: MailBudgetRules = Object.fromEntries(
  Object.entries(MAIL_BUDGETS).map(([kind, rules]) => [kind, rules.map((r) => ({ ...r, limit: 1_000_000 }))]),
) as unknown as MailBudgetRules;

/**
 * The mail budgets: what each kind of mail may spend, per recipient mailbox, per client, per
 * site, per organization and per inviter, in fixed windows. Pure: no clock, no store.
 * docs/security.md states the worst case per hour that follows from these numbers.
 */

/** The kinds of mail the service sends on a caller's behalf; each kind has budgets of its own. */
export type MailKind = "sign_in" | "confirmation" | "invitation";

/**
 * What a budget counts: the recipient's mailbox (`+tag` and case folded), a mailbox's
 * confirmations for one list, the caller's client address, the site (console sign-in: the
 * tenant's console), the organization and the member who invites.
 */
export type BudgetScope = "mailbox" | "mailbox_list" | "client" | "site" | "organization" | "inviter";

export interface BudgetRule {
  readonly scope: BudgetScope;
  /** Most mails in one window. */
  readonly limit: number;
  /** The window's length; windows are aligned to the epoch (a clock hour, a UTC day). */
  readonly windowMs: number;
  /** Spending past this logs a warning and counts on /metrics, before the limit refuses. */
  readonly warnAt?: number;
}

export type MailBudgetRules = Readonly<Record<MailKind, readonly BudgetRule[]>>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The site ceiling is a backstop against a flood from many clients, not a door a few clients can
 * close: with the per-client budgets below, closing it takes thousands of clients (sign-in:
 * 10,000 / 60 = 167 clients spending their whole hour), and the operator is warned at 80%.
 */
const SITE_CEILING: BudgetRule = { scope: "site", limit: 10_000, windowMs: HOUR, warnAt: 8_000 };

/** The numbers docs/security.md ("Mail budgets") states; tests pass smaller ones. */
export const MAIL_BUDGETS: MailBudgetRules = Object.freeze({
  sign_in: Object.freeze([
    // Short windows: a stranger who spends a reader's budget holds that reader back 10 minutes at most.
    { scope: "mailbox", limit: 3, windowMs: 10 * MINUTE },
    { scope: "client", limit: 60, windowMs: HOUR },
    SITE_CEILING,
  ]),
  confirmation: Object.freeze([
    { scope: "mailbox_list", limit: 5, windowMs: HOUR },
    { scope: "mailbox", limit: 10, windowMs: HOUR },
    { scope: "mailbox", limit: 20, windowMs: DAY },
    { scope: "client", limit: 40, windowMs: HOUR },
    SITE_CEILING,
  ]),
  invitation: Object.freeze([
    { scope: "mailbox", limit: 3, windowMs: HOUR },
    { scope: "mailbox", limit: 10, windowMs: DAY },
    { scope: "inviter", limit: 30, windowMs: HOUR },
    { scope: "organization", limit: 100, windowMs: HOUR },
    SITE_CEILING,
  ]),
}) as MailBudgetRules;

/**
 * The mailbox an address delivers to, for counting only (mail still goes to the address as
 * given): case folded and a `+tag` dropped from the local part, so `Victim+1@Example.com` and
 * `victim@example.com` share one budget.
 */
export function mailboxOf(address: string): string {
  const normal = address.trim().toLowerCase();
  const at = normal.lastIndexOf("@");
  if (at <= 0) return normal;
  const local = normal.slice(0, at);
  const plus = local.indexOf("+");
  const base = plus > 0 ? local.slice(0, plus) : local;
  return `${base}@${normal.slice(at + 1).replace(/\.+$/, "")}`;
}

/** One budget to spend from: a rule, the subject it counts (a mailbox, a client), how many mails. */
export interface Charge {
  readonly kind: MailKind;
  readonly rule: BudgetRule;
  readonly subject: string;
  readonly amount: number;
}

/** What one spend names per scope: the subject and the mails charged to it. */
export type Spend = readonly (readonly [scope: BudgetScope, subject: string, mails: number])[];

/**
 * The charges of one spend: every rule of the kind whose scope the spend names. A spend that
 * names no subject for one of the kind's scopes is a programming error: a budget silently not
 * taken is the defect this module exists to prevent.
 */
export function chargesOf(kind: MailKind, spend: Spend, rules: MailBudgetRules = MAIL_BUDGETS): Charge[] {
  const charges: Charge[] = [];
  for (const rule of rules[kind]) {
    const named = spend.filter(([scope]) => scope === rule.scope);
    if (named.length === 0) throw new Error(`mail budget: ${kind} spends nothing from its ${rule.scope} budget`);
    for (const [, subject, mails] of named) {
      if (mails > 0) charges.push({ kind, rule, subject, amount: mails });
    }
  }
  return charges;
}

/**
 * The budget a caller is told of in the draft's `RateLimit` fields on a mail it asked for: its
 * own (its client address, or the member who invites). A recipient's mailbox budget is named only
 * when it refuses: its count would tell a stranger how often someone else asked for mail there.
 */
export const REPORTED_SCOPE: Readonly<Record<MailKind, BudgetScope>> = Object.freeze({
  sign_in: "client",
  confirmation: "client",
  invitation: "inviter",
});

/** A budget's name in `RateLimit-Policy`: `sign-in-client`, `invitation-mailbox`. */
export function policyName(kind: MailKind, rule: BudgetRule): string {
  return `${kind.replace("_", "-")}-${rule.scope.replace("_", "-")}`;
}

/** The name a charge's counter row is stored under (kind, scope and window length). */
export function budgetName(charge: Charge): string {
  return `${charge.kind}:${charge.rule.scope}:${charge.rule.windowMs}`;
}

/** The start of the window `nowMs` falls in (epoch-aligned). */
export function windowStartOf(rule: BudgetRule, nowMs: number): number {
  return Math.floor(nowMs / rule.windowMs) * rule.windowMs;
}

/** Whole seconds until the window `nowMs` falls in ends (at least 1): the Retry-After of a refusal. */
export function secondsLeftInWindow(rule: BudgetRule, nowMs: number): number {
  const end = windowStartOf(rule, nowMs) + rule.windowMs;
  return Math.max(1, Math.ceil((end - nowMs) / 1000));
}

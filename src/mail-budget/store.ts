import { lt, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { mailBudget } from "../../db/schema";
import { budgetName, type Charge, windowStartOf } from "./budgets";

/** A transaction (or the database itself): what the budget is taken in. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** What taking a set of charges did. */
export interface Taken {
  /** The first charge that would pass its limit (then the caller rolls the transaction back). */
  readonly refused: Charge | null;
  /** Charges whose spend crossed their rule's `warnAt` with this take. */
  readonly crossed: readonly Charge[];
  /** Each counter taken (charges of one counter merged) and what it holds after this take. */
  readonly spent: readonly { readonly charge: Charge; readonly spent: number }[];
}

/** Where budgets are counted: one store of truth for every process (never per-process memory). */
export interface MailBudgetStore {
  /**
   * Takes every charge inside `tx`, or stops at the first that would pass its limit. Must hold
   * each taken counter until `tx` ends, so a concurrent take waits and then sees this one.
   */
  take(tx: Tx, tenantId: string, charges: readonly Charge[], nowMs: number): Promise<Taken>;
  /** Drops counters whose window has ended; returns how many. */
  prune(nowMs: number): Promise<number>;
}

/**
 * Counters in `mail_budget`, one row per (tenant, budget, subject, window), each raised by one
 * conditional upsert: `insert ... on conflict do update ... where spent + n <= limit returning`.
 *
 * Why a conditional upsert (and not `select ... for update` or an advisory lock): it is one
 * statement per budget; the row it inserts or updates stays locked until the transaction ends,
 * so a concurrent take of the same budget waits (on the row, or on the unique index for a row
 * not yet committed) and then re-checks the limit against the committed count; `for update`
 * cannot lock a row that does not exist yet, and an advisory lock would need a second statement
 * and a hash that may collide. Counters are taken in one order (budget, subject), so two takes
 * never wait on each other in a circle. The embedded store runs one transaction at a time.
 */
export class DrizzleMailBudgetStore implements MailBudgetStore {
  constructor(private readonly db: Db) {}

  async take(tx: Tx, tenantId: string, charges: readonly Charge[], nowMs: number): Promise<Taken> {
    const crossed: Charge[] = [];
    const taken: { charge: Charge; spent: number }[] = [];
    for (const { charge, budget, subject } of ordered(charges)) {
      const { rule, amount } = charge;
      const windowStart = windowStartOf(rule, nowMs);
      const expiresAt = new Date(windowStart + rule.windowMs).toISOString();
      const rows = rowsOf<{ spent: number | string }>(
        await tx.execute(sql`insert into mail_budget (tenant_id, budget, subject, window_start, spent, expires_at)
          select ${tenantId}, ${budget}, ${subject}, ${windowStart}::bigint, ${amount}::int, ${expiresAt}::timestamptz
          where ${amount}::int <= ${rule.limit}::int
          on conflict (tenant_id, budget, subject, window_start)
          do update set spent = mail_budget.spent + excluded.spent
          where mail_budget.spent + excluded.spent <= ${rule.limit}::int
          returning spent`),
      );
      const spent = rows[0]?.spent;
      if (spent === undefined) return { refused: charge, crossed: [], spent: [] };
      const after = Number(spent);
      taken.push({ charge, spent: after });
      if (rule.warnAt !== undefined && after >= rule.warnAt && after - amount < rule.warnAt) crossed.push(charge);
    }
    return { refused: null, crossed, spent: taken };
  }

  async prune(nowMs: number): Promise<number> {
    const rows = await this.db
      .delete(mailBudget)
      .where(lt(mailBudget.expiresAt, new Date(nowMs)))
      .returning({ spent: mailBudget.spent });
    return rows.length;
  }
}

/**
 * The charges merged per counter (two subjects that fold to one mailbox are one counter) and in
 * one global order, with subjects stored as their SHA-256 (no address or client kept in clear).
 * Both stores take counters in this order and merged this way.
 */
export function ordered(charges: readonly Charge[]): { charge: Charge; budget: string; subject: string }[] {
  const merged = new Map<string, { charge: Charge; budget: string; subject: string }>();
  for (const charge of charges) {
    const budget = budgetName(charge);
    const subject = Bun.SHA256.hash(charge.subject, "hex");
    const key = `${budget}\u0001${subject}`;
    const seen = merged.get(key);
    merged.set(
      key,
      seen === undefined
        ? { charge, budget, subject }
        : { ...seen, charge: { ...seen.charge, amount: seen.charge.amount + charge.amount } },
    );
  }
  return [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

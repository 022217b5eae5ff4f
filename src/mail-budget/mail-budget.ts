import type { Db } from "../../db/client";
import { rateLimitFields } from "../counters/rate-limit-fields";
import { errorText } from "../infra/error-text";
import type { Logger } from "../logger";
import {
  type BudgetScope,
  type Charge,
  chargesOf,
  MAIL_BUDGETS,
  type MailBudgetRules,
  type MailKind,
  policyName,
  REPORTED_SCOPE,
  type Spend,
  secondsLeftInWindow,
} from "./budgets";
import type { MailBudgetStore, Tx } from "./store";

/**
 * What a spend did: the write's value, or the budget that refused (nothing was written). Both
 * carry the draft's `RateLimit` and `RateLimit-Policy` fields for the answer (none when the
 * caller's own budget was not charged).
 */
export type Spent<T> =
  | { readonly ok: true; readonly value: T; readonly rateLimit: Record<string, string> }
  | {
      readonly ok: false;
      readonly retryAfterSeconds: number;
      readonly scope: BudgetScope;
      readonly rateLimit: Record<string, string>;
    };

/** Counts /metrics reads: refusals and ceiling warnings, by kind and scope (this process). */
export interface BudgetCounts {
  readonly refused: ReadonlyMap<string, number>;
  readonly warned: ReadonlyMap<string, number>;
}

/** Something to run once a spend's transaction has committed (the outbox's drain). */
export interface AfterCommit {
  kick(): void;
}

const PRUNE_EVERY = 500;

/**
 * One mail budget for every mail the service sends on a caller's behalf (sign-in links, double
 * opt-in confirmations, invitations). `spend` takes the budgets and runs the write (the link,
 * the confirmation, the invitation and its outbox rows) in one transaction: a refused spend
 * writes nothing, and concurrent spends, in this process or another on the same Postgres, never
 * pass a limit together.
 */
export class MailBudget {
  private readonly refused = new Map<string, number>();
  private readonly warned = new Map<string, number>();
  private spends = 0;

  constructor(
    private readonly db: Db,
    private readonly store: MailBudgetStore,
    private readonly outbox: AfterCommit,
    private readonly logger: Logger,
    private readonly now: () => number,
    readonly rules: MailBudgetRules = MAIL_BUDGETS,
  ) {}

  /**
   * Spends `spend` from the kind's budgets and runs `write` in the same transaction. A spend of
   * no mail (every amount 0) still runs `write` in a transaction, taking nothing.
   */
  async spend<T>(kind: MailKind, tenantId: string, spend: Spend, write: (tx: Tx) => Promise<T>): Promise<Spent<T>> {
    try {
      let rateLimit: Record<string, string> = {};
      const value = await this.db.transaction(async (tx) => {
        rateLimit = await this.takeIn(tx, kind, tenantId, spend);
        return write(tx);
      });
      this.outbox.kick();
      return { ok: true, value, rateLimit };
    } catch (error) {
      if (error instanceof MailBudgetRefused) return refusedOf(error);
      throw error;
    }
  }

  /**
   * Takes `spend` inside a transaction the caller runs (when whether to mail is known only
   * inside it). Throws MailBudgetRefused to roll that transaction back: the caller catches it
   * outside (`refusedOf`) and kicks the outbox after the commit. Answers the `RateLimit` fields
   * of the caller's own budget (REPORTED_SCOPE), left after this take.
   */
  async takeIn(tx: Tx, kind: MailKind, tenantId: string, spend: Spend): Promise<Record<string, string>> {
    const charges = chargesOf(kind, spend, this.rules);
    const nowMs = this.now();
    const taken = await this.store.take(tx, tenantId, charges, nowMs);
    if (taken.refused !== null) {
      this.bump(this.refused, taken.refused);
      const { rule } = taken.refused;
      throw new MailBudgetRefused(
        rule.scope,
        secondsLeftInWindow(rule, nowMs),
        rateLimitFields({ name: policyName(kind, rule), limit: rule.limit, windowMs: rule.windowMs }, 0, nowMs),
      );
    }
    for (const charge of taken.crossed) {
      this.bump(this.warned, charge);
      this.logger.warn("mail budget nearly spent", {
        kind: charge.kind,
        scope: charge.rule.scope,
        tenantId,
        warnAt: charge.rule.warnAt,
        limit: charge.rule.limit,
        windowSeconds: charge.rule.windowMs / 1000,
      });
    }
    if (++this.spends % PRUNE_EVERY === 0) this.prune(nowMs);
    const own = taken.spent.find((t) => t.charge.rule.scope === REPORTED_SCOPE[kind]);
    if (own === undefined) return {};
    const { rule } = own.charge;
    return rateLimitFields(
      { name: policyName(kind, rule), limit: rule.limit, windowMs: rule.windowMs },
      rule.limit - own.spent,
      nowMs,
    );
  }

  /**
   * Runs a write whose mails an earlier spend paid for (work a request handed off to a job, so
   * that the request does the same work whatever the address), in one transaction; the outbox
   * is kicked once it has committed.
   */
  async paid<T>(write: (tx: Tx) => Promise<T>): Promise<T> {
    const value = await this.db.transaction(write);
    this.outbox.kick();
    return value;
  }

  counts(): BudgetCounts {
    return { refused: this.refused, warned: this.warned };
  }

  private prune(nowMs: number): void {
    this.store.prune(nowMs).catch((error: unknown) => {
      this.logger.warn("mail budget prune failed", { error: errorText(error) });
    });
  }

  private bump(map: Map<string, number>, charge: Charge): void {
    const key = `${charge.kind}\u0001${charge.rule.scope}`;
    map.set(key, (map.get(key) ?? 0) + 1);
  }
}

/** A budget that would pass its limit: thrown inside the transaction, so nothing is written. */
export class MailBudgetRefused extends Error {
  constructor(
    readonly scope: BudgetScope,
    readonly retryAfterSeconds: number,
    /** The refusing budget's `RateLimit` fields (nothing left), for the 429. */
    readonly rateLimit: Record<string, string>,
  ) {
    super("mail budget spent");
  }
}

/** The domain result of a refusal, for the service to turn into its 429. */
export function refusedOf(error: MailBudgetRefused): Spent<never> {
  return { ok: false, retryAfterSeconds: error.retryAfterSeconds, scope: error.scope, rateLimit: error.rateLimit };
}

import { windowStartOf } from "./budgets";
import { type MailBudgetStore, ordered, type Taken, type Tx } from "./store";

/**
 * Mail budgets in memory, for tests that need no Postgres; held to the drizzle store by one
 * contract suite (test/stores/mail-budget-store.test.ts). A take is all or nothing by itself: a
 * refused take puts back what it raised before returning. It joins no transaction (it has none
 * to join), so a take the caller's transaction later rolls back stays spent. One process only:
 * the service itself always counts in Postgres (one store of truth for every process).
 */
export class MemoryMailBudgetStore implements MailBudgetStore {
  private readonly counters = new Map<string, { spent: number; expiresAt: number }>();

  async take(
    _tx: Tx,
    tenantId: string,
    charges: Parameters<MailBudgetStore["take"]>[2],
    nowMs: number,
  ): Promise<Taken> {
    const raised: { key: string; amount: number }[] = [];
    const crossed: Taken["crossed"][number][] = [];
    const taken: Taken["spent"][number][] = [];
    for (const { charge, budget, subject } of ordered(charges)) {
      const { rule, amount } = charge;
      const windowStart = windowStartOf(rule, nowMs);
      const key = `${tenantId}\u0001${budget}\u0001${subject}\u0001${windowStart}`;
      const counter = this.counters.get(key) ?? { spent: 0, expiresAt: windowStart + rule.windowMs };
      const after = counter.spent + amount;
      if (after > rule.limit) {
        for (const r of raised) {
          const held = this.counters.get(r.key);
          if (held !== undefined) held.spent -= r.amount;
          if (held !== undefined && held.spent <= 0) this.counters.delete(r.key);
        }
        return { refused: charge, crossed: [], spent: [] };
      }
      counter.spent = after;
      this.counters.set(key, counter);
      raised.push({ key, amount });
      taken.push({ charge, spent: after });
      if (rule.warnAt !== undefined && after >= rule.warnAt && after - amount < rule.warnAt) crossed.push(charge);
    }
    return { refused: null, crossed, spent: taken };
  }

  async prune(nowMs: number): Promise<number> {
    let pruned = 0;
    for (const [key, counter] of this.counters) {
      if (counter.expiresAt < nowMs) {
        this.counters.delete(key);
        pruned++;
      }
    }
    return pruned;
  }
}

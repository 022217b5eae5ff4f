import type { DecisionCountRow } from "../counters/decision-counts";
import {
  type BucketQuery,
  type CheckoutConversion,
  type CheckoutDay,
  type DecisionCountBucket,
  type InsightStore,
  type MeterValueCount,
  type StoredKey,
  summedRows,
} from "./store";

/** A checkout session as the memory twin holds it (tests add them). */
export interface MemoryCheckout {
  readonly tenantId: string;
  readonly siteId: string;
  readonly offer: string;
  readonly createdAt: number;
  readonly completedAt: number | null;
  readonly grantedUserId: string | null;
}

const DAY_MS = 86_400_000;

/** The in-memory twin of `DrizzleInsightStore` (one contract suite runs over both). */
export class MemoryInsightStore implements InsightStore {
  private readonly counts = new Map<string, DecisionCountBucket & StoredKey>();
  readonly checkouts: MemoryCheckout[] = [];
  /** Per (tenant, site, meter, period): each subject's value. */
  readonly meters = new Map<string, Map<string, number>>();

  async addDecisionCounts(rows: readonly DecisionCountRow[]): Promise<void> {
    for (const [id, row] of summedRows(rows)) {
      const known = this.counts.get(id);
      this.counts.set(id, { ...row, count: (known?.count ?? 0) + row.count });
    }
  }

  async decisionBuckets(q: BucketQuery): Promise<DecisionCountBucket[]> {
    const out: DecisionCountBucket[] = [];
    for (const r of this.counts.values()) {
      if (r.tenantId !== q.tenantId || r.siteId !== q.siteId || r.grain !== q.grain) continue;
      if (r.bucket < q.from || r.bucket >= q.to) continue;
      const { tenantId: _t, siteId: _s, grain: _g, ...bucket } = r;
      out.push(bucket);
    }
    const key = (b: DecisionCountBucket) => [b.feature, b.outcome, b.experiment, b.variant].join("\u0001");
    return out.sort((a, b) => a.bucket - b.bucket || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  async checkoutDays(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutDay[]> {
    const days = new Map<string, { day: number; offer: string; started: number; completed: number; granted: number }>();
    const at = (ms: number, offer: string) => {
      const day = ms - (ms % DAY_MS);
      const id = `${day}\u0001${offer}`;
      let d = days.get(id);
      if (d === undefined) {
        d = { day, offer, started: 0, completed: 0, granted: 0 };
        days.set(id, d);
      }
      return d;
    };
    for (const c of this.checkouts) {
      if (c.tenantId !== tenantId || c.siteId !== siteId) continue;
      if (c.createdAt >= from && c.createdAt < to) at(c.createdAt, c.offer).started++;
      if (c.completedAt !== null && c.completedAt >= from && c.completedAt < to) {
        const d = at(c.completedAt, c.offer);
        d.completed++;
        if (c.grantedUserId !== null) d.granted++;
      }
    }
    return [...days.values()].sort((a, b) => a.day - b.day || (a.offer < b.offer ? -1 : a.offer > b.offer ? 1 : 0));
  }

  async conversions(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutConversion[]> {
    return this.checkouts
      .filter(
        (c) =>
          c.tenantId === tenantId &&
          c.siteId === siteId &&
          c.grantedUserId !== null &&
          c.completedAt !== null &&
          c.completedAt >= from &&
          c.completedAt < to,
      )
      .map((c) => ({ userId: c.grantedUserId as string, offer: c.offer, completedAt: c.completedAt as number }));
  }

  async meterValues(
    tenantId: string,
    siteId: string,
    meter: string,
    period: string,
    _kind: "seen" | "count",
  ): Promise<MeterValueCount[]> {
    const values = this.meters.get([tenantId, siteId, meter, period].join("\u0001"));
    const readers = new Map<number, number>();
    for (const v of values?.values() ?? []) if (v > 0) readers.set(v, (readers.get(v) ?? 0) + 1);
    return [...readers].sort((a, b) => a[0] - b[0]).map(([value, n]) => ({ value, readers: n }));
  }
}

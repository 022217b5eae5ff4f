import type { UsageStore } from "./store";

/** Engine calls per tenant and UTC month in memory; held to the drizzle store by one contract suite. */
export class MemoryUsageStore implements UsageStore {
  private readonly calls = new Map<string, Map<string, number>>();

  async countCall(tenantId: string, now: number): Promise<void> {
    const period = new Date(now).toISOString().slice(0, 7);
    let periods = this.calls.get(tenantId);
    if (periods === undefined) {
      periods = new Map();
      this.calls.set(tenantId, periods);
    }
    periods.set(period, (periods.get(period) ?? 0) + 1);
  }

  async usage(tenantId: string): Promise<{ period: string; calls: number }[]> {
    const periods = this.calls.get(tenantId);
    if (periods === undefined) return [];
    return [...periods]
      .map(([period, calls]) => ({ period, calls }))
      .sort((a, b) => (a.period < b.period ? 1 : a.period > b.period ? -1 : 0));
  }
}

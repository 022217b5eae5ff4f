import { desc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { recommendationUsage } from "../../db/schema";

/** Engine calls per tenant and UTC month: every call spends the tenant's quota with the engine. */
export interface UsageStore {
  countCall(tenantId: string, now: number): Promise<void>;
  usage(tenantId: string): Promise<{ period: string; calls: number }[]>;
}

export class DrizzleUsageStore implements UsageStore {
  constructor(private readonly db: Db) {}

  async countCall(tenantId: string, now: number): Promise<void> {
    const period = new Date(now).toISOString().slice(0, 7);
    await this.db
      .insert(recommendationUsage)
      .values({ tenantId, period, calls: 1 })
      .onConflictDoUpdate({
        target: [recommendationUsage.tenantId, recommendationUsage.period],
        set: { calls: sql`${recommendationUsage.calls} + 1` },
      });
  }

  async usage(tenantId: string): Promise<{ period: string; calls: number }[]> {
    const rows = await this.db
      .select({ period: recommendationUsage.period, calls: recommendationUsage.calls })
      .from(recommendationUsage)
      .where(eq(recommendationUsage.tenantId, tenantId))
      .orderBy(desc(recommendationUsage.period));
    return rows.map((r) => ({ period: r.period, calls: Number(r.calls) }));
  }
}

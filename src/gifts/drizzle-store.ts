import { and, eq, gt, isNotNull, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { giftAllowances, giftLinks } from "../../db/schema";
import {
  type AttributionReport,
  attributionOf,
  type GiftRow,
  type GiftStore,
  REDEMPTION_METER,
  REDEMPTION_PERIOD,
} from "./store";

/** Postgres-backed gift links: minting against the monthly allowance, revocation, attribution. */
export class DrizzleGiftStore implements GiftStore {
  constructor(private readonly db: Db) {}

  /**
   * Takes one gift of the gifter's month and records the link, in one transaction; null (nothing
   * written) when the allowance is spent. The allowance is one row per (site, gifter, month)
   * raised by a conditional upsert, so concurrent mints never pass the limit. Answers what is
   * left of the month's allowance.
   */
  async mint(row: Omit<GiftRow, "revokedAt" | "createdAt">, period: string, limit: number): Promise<number | null> {
    return this.db.transaction(async (tx) => {
      const taken = rowsOf<{ count: number }>(
        await tx.execute(sql`insert into gift_allowances (tenant_id, site_id, gifter_id, period, count)
          select ${row.tenantId}, ${row.siteId}, ${row.gifterId}, ${period}, 1 where ${limit} > 0
          on conflict (tenant_id, site_id, gifter_id, period)
          do update set count = gift_allowances.count + 1 where gift_allowances.count < ${limit}
          returning count`),
      );
      const count = taken[0]?.count;
      if (count === undefined) return null;
      await tx.insert(giftLinks).values(row);
      return limit - Number(count);
    });
  }

  /** Gifts left in the gifter's month (the policy's limit minus those minted). */
  async remaining(tenantId: string, siteId: string, gifterId: string, period: string, limit: number): Promise<number> {
    const [row] = await this.db
      .select({ count: giftAllowances.count })
      .from(giftAllowances)
      .where(
        and(
          eq(giftAllowances.tenantId, tenantId),
          eq(giftAllowances.siteId, siteId),
          eq(giftAllowances.gifterId, gifterId),
          eq(giftAllowances.period, period),
        ),
      );
    return Math.max(0, limit - (row?.count ?? 0));
  }

  async byId(tenantId: string, siteId: string, id: string): Promise<GiftRow | undefined> {
    const [row] = await this.db
      .select()
      .from(giftLinks)
      .where(and(eq(giftLinks.tenantId, tenantId), eq(giftLinks.siteId, siteId), eq(giftLinks.id, id)));
    return row;
  }

  /** A gift of any of the tenant's sites (the change feed names only tenant and gift). */
  async byTenantId(tenantId: string, id: string): Promise<GiftRow | undefined> {
    const [row] = await this.db
      .select()
      .from(giftLinks)
      .where(and(eq(giftLinks.tenantId, tenantId), eq(giftLinks.id, id)));
    return row;
  }

  /** Marks a gift revoked (the first revocation's time is kept); false when there is no such gift. */
  async revoke(tenantId: string, siteId: string, id: string, at: Date): Promise<GiftRow | undefined> {
    const [row] = await this.db
      .update(giftLinks)
      .set({ revokedAt: sql`coalesce(${giftLinks.revokedAt}, ${at.toISOString()}::timestamptz)` })
      .where(and(eq(giftLinks.tenantId, tenantId), eq(giftLinks.siteId, siteId), eq(giftLinks.id, id)))
      .returning();
    return row;
  }

  /** Revoked gifts not yet expired: what every process holds in memory. */
  async revokedSince(now: Date): Promise<{ id: string; expiresAt: Date }[]> {
    return this.db
      .select({ id: giftLinks.id, expiresAt: giftLinks.expiresAt })
      .from(giftLinks)
      .where(and(isNotNull(giftLinks.revokedAt), gt(giftLinks.expiresAt, now)));
  }

  /** Mints and redemptions of a site's gifts, per gifter and per article (most minted first). */
  async attribution(tenantId: string, siteId: string): Promise<AttributionReport> {
    const per = (column: "gifter_id" | "content_id") => sql`
      select g.${sql.raw(column)}::text as key, count(distinct g.id)::int as mints, count(s.item)::int as redemptions
      from gift_links g
      left join meter_keys k on k.tenant_id = g.tenant_id and k.site_id = g.site_id
        and k.meter = ${REDEMPTION_METER} and k.period = ${REDEMPTION_PERIOD}
      left join meter_seen s on s.meter_id = k.id and s.subject = g.id::text
      where g.tenant_id = ${tenantId} and g.site_id = ${siteId}
      group by g.${sql.raw(column)} order by mints desc, key`;
    type Line = { key: string; mints: number; redemptions: number };
    const gifters = rowsOf<Line>(await this.db.execute(per("gifter_id")));
    const articles = rowsOf<Line>(await this.db.execute(per("content_id")));
    return attributionOf(gifters, articles);
  }
}

import type { giftLinks } from "../../db/schema";

// The interface and its rules apart from the drizzle store (drizzle-store.ts): the ledger, among
// the modules keyed decide runs on, needs the redemption meter's name and loads no drizzle.

export type GiftRow = typeof giftLinks.$inferSelect;

/** The seen counter whose members are a gift's redemptions: subject = gift id, item = recipient. */
export const REDEMPTION_METER = "$gift";
export const REDEMPTION_PERIOD = "forever";

export interface AttributionLine {
  readonly mints: number;
  readonly redemptions: number;
}
export interface AttributionReport {
  readonly gifters: (AttributionLine & { readonly gifter: string })[];
  readonly articles: (AttributionLine & { readonly contentId: string })[];
}

/**
 * Where gift links and the gifters' monthly allowances live: Postgres behind this interface, or
 * the in-memory twin (one contract suite holds both). Ids and gifter ids are uuids: another
 * string is refused as Postgres refuses it.
 */
export interface GiftStore {
  /**
   * Takes one gift of the gifter's month and records the link, at once; null (nothing written)
   * when the allowance is spent. Answers what is left of the month's allowance. A link id already
   * stored rejects, and takes nothing of the allowance.
   */
  mint(row: Omit<GiftRow, "revokedAt" | "createdAt">, period: string, limit: number): Promise<number | null>;
  /** Gifts left in the gifter's month (the policy's limit minus those minted, never below 0). */
  remaining(tenantId: string, siteId: string, gifterId: string, period: string, limit: number): Promise<number>;
  byId(tenantId: string, siteId: string, id: string): Promise<GiftRow | undefined>;
  /** A gift of any of the tenant's sites (the change feed names only tenant and gift). */
  byTenantId(tenantId: string, id: string): Promise<GiftRow | undefined>;
  /** Marks a gift revoked (the first revocation's time is kept); undefined when there is no such gift. */
  revoke(tenantId: string, siteId: string, id: string, at: Date): Promise<GiftRow | undefined>;
  /** Revoked gifts not yet expired at `now`, of every tenant: what every process holds in memory. */
  revokedSince(now: Date): Promise<{ id: string; expiresAt: Date }[]>;
  /**
   * Mints and redemptions (members of the `$gift` seen counter) of a site's gifts, per gifter and
   * per article: most minted first, then by gifter or article.
   */
  attribution(tenantId: string, siteId: string): Promise<AttributionReport>;
}

/** A report's lines from (key, mints, redemptions) rows, in the report's order. */
export function attributionOf(
  gifters: readonly { key: string; mints: number; redemptions: number }[],
  articles: readonly { key: string; mints: number; redemptions: number }[],
): AttributionReport {
  return {
    gifters: gifters.map((r) => ({ gifter: r.key, mints: Number(r.mints), redemptions: Number(r.redemptions) })),
    articles: articles.map((r) => ({ contentId: r.key, mints: Number(r.mints), redemptions: Number(r.redemptions) })),
  };
}

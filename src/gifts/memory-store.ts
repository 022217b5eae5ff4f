import { MemoryMeterStore } from "../counters/memory-meter-store";
import type { MeterStore } from "../counters/meter-store";
import { meterKey } from "../counters/meter-values";
import { copyRow, UniqueViolation, uuidOf } from "../infra/memory-rows";
import {
  type AttributionReport,
  attributionOf,
  type GiftRow,
  type GiftStore,
  REDEMPTION_METER,
  REDEMPTION_PERIOD,
} from "./store";

type Line = { key: string; mints: number; redemptions: number };

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Gift links and allowances in memory, for tests that need no Postgres; held to the drizzle store
 * by one contract suite. Redemptions are read from `meters` (the `$gift` seen counter), as the
 * drizzle store reads `meter_seen`.
 */
export class MemoryGiftStore implements GiftStore {
  /** By id (lower case, as a uuid column answers it), in the order minted. */
  private readonly links = new Map<string, GiftRow>();
  private readonly allowances = new Map<string, number>();

  constructor(
    private readonly meters: MeterStore = new MemoryMeterStore(),
    private readonly now: () => number = Date.now,
  ) {}

  private static allowance(tenantId: string, siteId: string, gifterId: string, period: string): string {
    return JSON.stringify([tenantId, siteId, uuidOf(gifterId), period]);
  }

  async mint(row: Omit<GiftRow, "revokedAt" | "createdAt">, period: string, limit: number): Promise<number | null> {
    const key = MemoryGiftStore.allowance(row.tenantId, row.siteId, row.gifterId, period);
    const count = this.allowances.get(key) ?? 0;
    if (count >= limit) return null;
    const id = uuidOf(row.id);
    if (this.links.has(id)) throw new UniqueViolation("gift_links_pkey");
    this.links.set(id, {
      ...copyRow(row),
      id,
      gifterId: uuidOf(row.gifterId),
      revokedAt: null,
      createdAt: new Date(this.now()),
    });
    this.allowances.set(key, count + 1);
    return limit - (count + 1);
  }

  async remaining(tenantId: string, siteId: string, gifterId: string, period: string, limit: number): Promise<number> {
    return Math.max(
      0,
      limit - (this.allowances.get(MemoryGiftStore.allowance(tenantId, siteId, gifterId, period)) ?? 0),
    );
  }

  async byId(tenantId: string, siteId: string, id: string): Promise<GiftRow | undefined> {
    const row = this.links.get(uuidOf(id));
    return row?.tenantId === tenantId && row.siteId === siteId ? copyRow(row) : undefined;
  }

  async byTenantId(tenantId: string, id: string): Promise<GiftRow | undefined> {
    const row = this.links.get(uuidOf(id));
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  async revoke(tenantId: string, siteId: string, id: string, at: Date): Promise<GiftRow | undefined> {
    const row = this.links.get(uuidOf(id));
    if (row?.tenantId !== tenantId || row.siteId !== siteId) return undefined;
    row.revokedAt ??= new Date(at.getTime());
    return copyRow(row);
  }

  async revokedSince(now: Date): Promise<{ id: string; expiresAt: Date }[]> {
    return [...this.links.values()]
      .filter((row) => row.revokedAt !== null && row.expiresAt > now)
      .map((row) => ({ id: row.id, expiresAt: new Date(row.expiresAt.getTime()) }));
  }

  async attribution(tenantId: string, siteId: string): Promise<AttributionReport> {
    const gifts = [...this.links.values()].filter((row) => row.tenantId === tenantId && row.siteId === siteId);
    const subject = (id: string) => meterKey(tenantId, siteId, REDEMPTION_METER, id, REDEMPTION_PERIOD);
    const seen = await this.meters.load(gifts.map((row) => subject(row.id)));
    const per = (keyOf: (row: GiftRow) => string): Line[] => {
      const lines = new Map<string, Line>();
      for (const row of gifts) {
        const line = lines.get(keyOf(row)) ?? { key: keyOf(row), mints: 0, redemptions: 0 };
        line.mints += 1;
        line.redemptions += seen.get(subject(row.id))?.items?.length ?? 0;
        lines.set(line.key, line);
      }
      return [...lines.values()].sort((a, b) => b.mints - a.mints || byText(a.key, b.key));
    };
    return attributionOf(
      per((row) => row.gifterId),
      per((row) => row.contentId),
    );
  }
}

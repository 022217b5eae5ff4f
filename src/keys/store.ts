import { and, desc, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { apiKeys } from "../../db/schema";

export type KeyRow = typeof apiKeys.$inferSelect;

export type NewKeyRow = typeof apiKeys.$inferInsert;

/** Where API keys live (hashes only): Postgres behind this interface, or the in-memory twin. */
export interface KeyStore {
  /** Rejects a second key with the same id or hash. */
  insert(row: NewKeyRow): Promise<KeyRow>;
  byHash(hash: string): Promise<KeyRow | undefined>;
  byId(id: string): Promise<KeyRow | undefined>;
  /** Every key neither revoked nor expired at `at`: what a process holds in memory from its start. */
  listUsable(at: Date): Promise<KeyRow[]>;
  /** Newest first. */
  listForSite(tenantId: string, siteId: string): Promise<KeyRow[]>;
  /** Marks a key revoked (once: a second revoke keeps the first date); the row, its count and last use stay. */
  revoke(id: string, at: Date): Promise<KeyRow | undefined>;
  /** Adds request counts and moves last-used dates forward (never back), for many keys at once. */
  addUsage(usage: { id: string; delta: number; lastUsedOn: string }[]): Promise<void>;
}

/** Postgres-backed store of API keys. Holds hashes only. */
export class DrizzleKeyStore implements KeyStore {
  constructor(private readonly db: Db) {}

  async insert(row: NewKeyRow): Promise<KeyRow> {
    const [created] = await this.db.insert(apiKeys).values(row).returning();
    if (!created) throw new Error("key insert returned no row");
    return created;
  }

  async byHash(hash: string): Promise<KeyRow | undefined> {
    const [row] = await this.db.select().from(apiKeys).where(eq(apiKeys.hash, hash));
    return row;
  }

  async byId(id: string): Promise<KeyRow | undefined> {
    const [row] = await this.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    return row;
  }

  /** Every key neither revoked nor expired at `at`: what a process holds in memory from its start. */
  async listUsable(at: Date): Promise<KeyRow[]> {
    return this.db
      .select()
      .from(apiKeys)
      .where(and(isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, at))));
  }

  async listForSite(tenantId: string, siteId: string): Promise<KeyRow[]> {
    return this.db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.siteId, siteId)))
      .orderBy(desc(apiKeys.createdAt), apiKeys.id);
  }

  /** Marks a key revoked (once); the row, its count and last use stay. */
  async revoke(id: string, at: Date): Promise<KeyRow | undefined> {
    const [row] = await this.db
      .update(apiKeys)
      .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, ${at.toISOString()}::timestamptz)` })
      .where(eq(apiKeys.id, id))
      .returning();
    return row;
  }

  /** Adds request counts and moves last-used dates forward, for many keys in one statement. */
  async addUsage(usage: { id: string; delta: number; lastUsedOn: string }[]): Promise<void> {
    if (usage.length === 0) return;
    const ids = sql.param(usage.map((u) => u.id));
    const deltas = sql.param(usage.map((u) => u.delta));
    const days = sql.param(usage.map((u) => u.lastUsedOn));
    await this.db.execute(sql`update api_keys as k
      set request_count = k.request_count + v.delta,
          last_used_on = greatest(k.last_used_on, v.last_used_on::date)
      from unnest(${ids}::text[], ${deltas}::int[], ${days}::text[]) as v(id, delta, last_used_on)
      where k.id = v.id::uuid`);
  }
}

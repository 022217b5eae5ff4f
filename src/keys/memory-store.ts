import { copyRow, UniqueViolation } from "../infra/memory-rows";
import type { KeyRow, KeyStore, NewKeyRow } from "./store";

/** API keys in memory, for tests that need no Postgres; held to the drizzle store by one contract suite. */
export class MemoryKeyStore implements KeyStore {
  private readonly rows = new Map<string, KeyRow>();
  /** Insertion order: Postgres's microsecond `now()` orders keys made in the same millisecond. */
  private readonly order = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  async insert(row: NewKeyRow): Promise<KeyRow> {
    if (this.rows.has(row.id)) throw new UniqueViolation("api_keys_pkey");
    for (const held of this.rows.values()) if (held.hash === row.hash) throw new UniqueViolation("api_keys_hash_idx");
    const created: KeyRow = {
      id: row.id,
      tenantId: row.tenantId,
      siteId: row.siteId,
      name: row.name,
      prefix: row.prefix,
      hash: row.hash,
      permissions: [...(row.permissions ?? [])],
      expiresAt: row.expiresAt ?? null,
      revokedAt: row.revokedAt ?? null,
      requestCount: row.requestCount ?? 0,
      lastUsedOn: row.lastUsedOn ?? null,
      createdAt: row.createdAt ?? new Date(this.now()),
    };
    this.rows.set(created.id, created);
    this.order.set(created.id, this.order.size);
    return copyRow(created);
  }

  async byHash(hash: string): Promise<KeyRow | undefined> {
    for (const row of this.rows.values()) if (row.hash === hash) return copyRow(row);
    return undefined;
  }

  async byId(id: string): Promise<KeyRow | undefined> {
    const row = this.rows.get(id);
    return row === undefined ? undefined : copyRow(row);
  }

  async listUsable(at: Date): Promise<KeyRow[]> {
    return [...this.rows.values()]
      .filter((row) => row.revokedAt === null && (row.expiresAt === null || row.expiresAt > at))
      .map(copyRow);
  }

  async listForSite(tenantId: string, siteId: string): Promise<KeyRow[]> {
    return [...this.rows.values()]
      .filter((row) => row.tenantId === tenantId && row.siteId === siteId)
      .sort(
        (a, b) =>
          b.createdAt.getTime() - a.createdAt.getTime() || (this.order.get(b.id) ?? 0) - (this.order.get(a.id) ?? 0),
      )
      .map(copyRow);
  }

  async revoke(id: string, at: Date): Promise<KeyRow | undefined> {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    row.revokedAt ??= new Date(at.getTime());
    return copyRow(row);
  }

  async addUsage(usage: { id: string; delta: number; lastUsedOn: string }[]): Promise<void> {
    for (const u of usage) {
      const row = this.rows.get(u.id);
      if (row === undefined) continue;
      row.requestCount += u.delta;
      if (row.lastUsedOn === null || u.lastUsedOn > row.lastUsedOn) row.lastUsedOn = u.lastUsedOn;
    }
  }
}

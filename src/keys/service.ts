import { randomUUID } from "node:crypto";
import type { ChangeFeed } from "../changes/change-feed";
import { DEFAULT_READ_DEADLINE_MS, withinDeadline } from "../infra/deadline";
import { AppError } from "../infra/errors";
import { generateKeyValue, hashSecret, keyPrefix } from "./key-value";
import type { KeyRow, KeyStore } from "./store";
import type { KeyUsage } from "./usage";

export const STREAMING_WRITE = "streaming:write";

/** A key as the credential guard sees it. */
export interface ApiKey {
  readonly id: string;
  readonly tenantId: string;
  readonly siteId: string;
  readonly permissions: readonly string[];
  readonly expiresAt: number | null;
  readonly revoked: boolean;
}

export type KeyStatus = "active" | "revoked" | "expired";

/** One row of a key listing: what the console shows. */
export interface KeyListing {
  id: string;
  site: string;
  name: string;
  prefix: string;
  permissions: string[];
  status: KeyStatus;
  requests: number;
  lastUsed: string | null;
  expires: string | null;
  createdAt: string;
}

export interface IssueKeyInput {
  name: string;
  expiresInDays?: number;
  permissions?: string[];
}

const NEGATIVE_TTL_MS = 2_000;
const NEGATIVE_MAX = 10_000;

function toApiKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    tenantId: row.tenantId,
    siteId: row.siteId,
    permissions: Object.freeze([...row.permissions]),
    expiresAt: row.expiresAt ? row.expiresAt.getTime() : null,
    revoked: row.revokedAt !== null,
  };
}

/**
 * Issues, lists and revokes keys, and authenticates key values against an in-memory table
 * (by hash), filled with every usable key at start (`loadAll`), with the keys this process
 * issues, and with those the change feed reports from other processes. A miss (a key issued
 * elsewhere whose change has not arrived yet, a revoked or unknown value) reads the store once;
 * unknown values are remembered briefly so a flood of bad keys does not reach Postgres, and any
 * key change clears that memory.
 */
export class KeyService {
  private readonly byHash = new Map<string, ApiKey>();
  private readonly hashById = new Map<string, string>();
  private readonly unknown = new Map<string, number>();
  private readonly loading = new Map<string, Promise<ApiKey | null>>();

  constructor(
    private readonly store: KeyStore,
    private readonly usage: KeyUsage,
    private readonly changes: ChangeFeed,
    /** How long a request waits for a key it does not hold before it answers 503. */
    private readonly readDeadlineMs = DEFAULT_READ_DEADLINE_MS,
  ) {}

  async issue(
    tenantId: string,
    siteId: string,
    input: IssueKeyInput,
    nowMs: number,
  ): Promise<KeyListing & { key: string }> {
    const value = generateKeyValue();
    const permissions = [...new Set(input.permissions ?? [])].sort();
    const row = await this.store.insert({
      id: randomUUID(),
      tenantId,
      siteId,
      name: input.name,
      prefix: keyPrefix(value),
      hash: hashSecret(value),
      permissions,
      expiresAt: input.expiresInDays ? new Date(nowMs + input.expiresInDays * 86_400_000) : null,
    });
    this.remember(row);
    await this.changes.publish({ topic: "key", tenantId, subject: row.id });
    return { ...this.listing(row, nowMs), key: value };
  }

  async list(tenantId: string, siteId: string, nowMs: number): Promise<KeyListing[]> {
    const rows = await this.store.listForSite(tenantId, siteId);
    return rows.map((r) => this.listing(r, nowMs));
  }

  async revoke(tenantId: string, siteId: string, id: string, nowMs: number): Promise<KeyListing> {
    const existing = await this.store.byId(id);
    if (!existing || existing.tenantId !== tenantId || existing.siteId !== siteId) {
      throw new AppError("not_found", "Unknown key.");
    }
    const row = await this.store.revoke(id, new Date(nowMs));
    if (!row) throw new AppError("not_found", "Unknown key.");
    await this.changes.publish({ topic: "key", tenantId, subject: id });
    return this.listing(row, nowMs);
  }

  /**
   * Holds every usable key in memory, so that no key's first request after a start waits for a
   * read (a restarted process under load would otherwise read each key in turn, one after another
   * on the embedded store, while its requests queue). Returns how many.
   */
  async loadAll(nowMs: number): Promise<number> {
    const rows = await this.store.listUsable(new Date(nowMs));
    for (const row of rows) this.remember(row);
    return rows.length;
  }

  /**
   * The active key for a presented value, or null when unknown, revoked or expired.
   * Synchronous when the key is held in memory; a read past the deadline rejects with 503.
   */
  authenticate(value: string, nowMs: number): ApiKey | null | Promise<ApiKey | null> {
    const hash = hashSecret(value);
    const held = this.byHash.get(hash);
    if (held) return isUsable(held, nowMs) ? held : null;
    const unknownUntil = this.unknown.get(hash);
    if (unknownUntil !== undefined && unknownUntil > nowMs) return null;
    return withinDeadline(this.load(hash, nowMs), this.readDeadlineMs).then((key) =>
      key && isUsable(key, nowMs) ? key : null,
    );
  }

  recordUse(key: ApiKey, nowMs: number): void {
    this.usage.record(key.id, nowMs);
  }

  /** Change-feed handler: a key was issued or revoked somewhere (this process included). */
  async onKeyChanged(id: string): Promise<void> {
    this.unknown.clear();
    const row = await this.store.byId(id);
    if (row) this.remember(row);
    else {
      const hash = this.hashById.get(id);
      if (hash !== undefined) this.byHash.delete(hash);
      this.hashById.delete(id);
    }
  }

  private load(hash: string, nowMs: number): Promise<ApiKey | null> {
    const inFlight = this.loading.get(hash);
    if (inFlight) return inFlight;
    const promise = this.store
      .byHash(hash)
      .then((row) => {
        if (row) return this.remember(row);
        if (this.unknown.size >= NEGATIVE_MAX) this.unknown.clear();
        this.unknown.set(hash, nowMs + NEGATIVE_TTL_MS);
        return null;
      })
      .finally(() => this.loading.delete(hash));
    this.loading.set(hash, promise);
    return promise;
  }

  private remember(row: KeyRow): ApiKey {
    const key = toApiKey(row);
    this.byHash.set(row.hash, key);
    this.hashById.set(row.id, row.hash);
    return key;
  }

  private listing(row: KeyRow, nowMs: number): KeyListing {
    const pending = this.usage.unflushed(row.id);
    const stored = row.lastUsedOn;
    const lastUsed = pending && (!stored || pending.lastUsedOn > stored) ? pending.lastUsedOn : stored;
    const key = toApiKey(row);
    return {
      id: row.id,
      site: row.siteId,
      name: row.name,
      prefix: row.prefix,
      permissions: row.permissions.length > 0 ? [...row.permissions] : ["default"],
      status: key.revoked ? "revoked" : isUsable(key, nowMs) ? "active" : "expired",
      requests: Number(row.requestCount) + (pending?.delta ?? 0),
      lastUsed: lastUsed ?? null,
      expires: row.expiresAt ? row.expiresAt.toISOString() : null,
      createdAt: row.createdAt.toISOString(),
    };
  }
}

function isUsable(key: ApiKey, nowMs: number): boolean {
  return !key.revoked && (key.expiresAt === null || key.expiresAt > nowMs);
}

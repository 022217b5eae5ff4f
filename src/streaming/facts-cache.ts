import type { FactSnapshot } from "../core/types";
import { BatchLoader } from "../counters/batch-loader";
import type { StoredRow, StreamingStore } from "./store";

export type StreamingFacts = FactSnapshot["streaming"];

const SEP = "\u0001";
const NONE: StreamingFacts = Object.freeze({});

/**
 * Users' streaming values at each site, as decide reads them (`streaming.<pipeline>.<field>`,
 * plus `window_end` as an ISO 8601 string): a hit costs no I/O; misses are batched and
 * single-flight per site. A write drops the written users in every process (change feed topic
 * `streaming`); a load that was in flight when its user was dropped answers its request but is
 * not kept, so an entry never holds values older than the last write it was told of.
 */
export class StreamingFactsCache {
  private readonly entries = new Map<string, StreamingFacts>();
  private readonly loaders = new Map<string, BatchLoader<StreamingFacts>>();
  /** Keys being loaded; true once dropped while loading. */
  private readonly loading = new Map<string, boolean>();

  constructor(
    private readonly store: StreamingStore,
    private readonly max = 500_000,
  ) {}

  /** A user's values at a site, synchronously when held. */
  get(tenantId: string, siteId: string, userId: string): StreamingFacts | Promise<StreamingFacts> {
    const key = tenantId + SEP + siteId + SEP + userId;
    const held = this.entries.get(key);
    if (held !== undefined) return held;
    if (!this.loading.has(key)) this.loading.set(key, false);
    return this.loader(tenantId, siteId)
      .load(userId)
      .then(
        (facts) => {
          const again = this.entries.get(key);
          if (again !== undefined) return again;
          const dropped = this.loading.get(key);
          this.loading.delete(key);
          if (dropped === false) {
            this.entries.set(key, facts);
            if (this.entries.size > this.max) {
              const oldest = this.entries.keys().next().value;
              if (oldest !== undefined) this.entries.delete(oldest);
            }
          }
          return facts;
        },
        (error: unknown) => {
          this.loading.delete(key);
          throw error;
        },
      );
  }

  /** Drops users' values at a site (a change of topic `streaming`: `<site>\n<id>,<id>,...`). */
  invalidate(tenantId: string, subject: string): void {
    const newline = subject.indexOf("\n");
    if (newline === -1) return;
    this.drop(tenantId, subject.slice(0, newline), subject.slice(newline + 1).split(","));
  }

  /** Drops the values of users at a site (the writing process, before it answers). */
  drop(tenantId: string, siteId: string, userIds: Iterable<string>): void {
    const prefix = tenantId + SEP + siteId + SEP;
    for (const userId of userIds) {
      const key = prefix + userId;
      this.entries.delete(key);
      if (this.loading.has(key)) this.loading.set(key, true);
    }
  }

  private loader(tenantId: string, siteId: string): BatchLoader<StreamingFacts> {
    const site = tenantId + SEP + siteId;
    let loader = this.loaders.get(site);
    if (loader === undefined) {
      loader = new BatchLoader(
        async (ids) => toFacts(await this.store.rowsOf(tenantId, siteId, ids)),
        () => NONE,
      );
      this.loaders.set(site, loader);
    }
    return loader;
  }
}

function toFacts(rows: readonly StoredRow[]): Map<string, StreamingFacts> {
  const byUser = new Map<string, Record<string, Readonly<Record<string, unknown>>>>();
  for (const row of rows) {
    let facts = byUser.get(row.userId);
    if (facts === undefined) {
      facts = {};
      byUser.set(row.userId, facts);
    }
    const values: Record<string, unknown> = {};
    // A null member is a cleared column: absent, as if never written.
    for (const [column, value] of Object.entries(row.values)) if (value !== null) values[column] = value;
    values.window_end = new Date(row.windowEnd).toISOString();
    facts[row.pipeline] = Object.freeze(values);
  }
  const out = new Map<string, StreamingFacts>();
  for (const [userId, facts] of byUser) out.set(userId, Object.freeze(facts));
  return out;
}

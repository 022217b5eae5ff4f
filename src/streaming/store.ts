import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { isUserId } from "../users/store";

/** One user's row of a batch, already resolved in the batch (one per user, merged). */
export interface PendingWrite {
  readonly userId: string;
  /** Epoch milliseconds. */
  readonly windowEnd: number;
  /** Declared columns the batch names for the user; null clears the stored value. */
  readonly values: Readonly<Record<string, string | number | boolean | null>>;
}

/** Why a pending write did not land; null when it did. */
export type WriteOutcome = "unknown_site" | "unknown_user" | "erased" | "stale" | null;

/** A stored row as decide reads it. */
export interface StoredRow {
  readonly userId: string;
  readonly pipeline: string;
  readonly windowEnd: number;
  readonly values: Readonly<Record<string, unknown>>;
}

/** Streaming values, one row per (site, user, pipeline): Postgres behind this interface, or the in-memory twin. */
export interface StreamingStore {
  /**
   * Writes a batch atomically: a row lands when the site is served (live, not disabled) and the
   * user exists and is not erased, and its window is not older than the stored one (members
   * merged: a null clears, an absent one keeps); the written users are logged on the change feed.
   * Answers each input user's outcome (null: written).
   */
  writeBatch(
    tenantId: string,
    siteId: string,
    pipeline: string,
    writes: readonly PendingWrite[],
  ): Promise<Map<string, WriteOutcome>>;
  /** Every pipeline's stored row of each user at one site (ids that are not uuids are skipped). */
  rowsOf(tenantId: string, siteId: string, userIds: readonly string[]): Promise<StoredRow[]>;
  /** Drops a user's values at every site (erasure). */
  eraseUser(tenantId: string, userId: string): Promise<void>;
}

/**
 * Postgres-backed streaming values: one row per (site, user, pipeline).
 *
 * `writeBatch` is one statement: it checks the site, joins the users, upserts the rows whose
 * `window_end` is not older than the stored one (column-merged: a member replaces, a null member
 * clears, an absent one keeps; a first row may keep its null members, which read as absent) and logs the written users in `change_log`, atomically. Postgres
 * evaluates ON CONFLICT's WHERE against the newest committed row under its lock, so concurrent
 * batches and retries can never put an older window over a newer one. Rows are written in user
 * id order so two batches locking the same users cannot deadlock.
 */
export class DrizzleStreamingStore implements StreamingStore {
  constructor(private readonly db: Db) {}

  async writeBatch(
    tenantId: string,
    siteId: string,
    pipeline: string,
    writes: readonly PendingWrite[],
  ): Promise<Map<string, WriteOutcome>> {
    const input = JSON.stringify(writes.map((w) => ({ u: w.userId, w: w.windowEnd, v: w.values })));
    const result = await this.db.execute(sql`
      with input as (
        select r.u, r.w, r.v from jsonb_to_recordset(${input}::jsonb) as r(u uuid, w bigint, v jsonb)
      ),
      site as (
        select exists (
          select 1 from sites
          where tenant_id = ${tenantId} and id = ${siteId} and not disabled and live_version is not null
        ) as served
      ),
      resolved as (
        select input.u, input.w, input.v, site.served, users.id as found, users.erased_at
        from input cross join site
        left join users on users.tenant_id = ${tenantId} and users.id = input.u
      ),
      written as (
        insert into streaming_values as sv (tenant_id, site_id, user_id, pipeline, window_end, "values", updated_at)
        select ${tenantId}, ${siteId}, r.u, ${pipeline}, r.w, r.v, now()
        from resolved r
        where r.served and r.found is not null and r.erased_at is null
        order by r.u
        on conflict (tenant_id, site_id, user_id, pipeline) do update
          set window_end = excluded.window_end,
              "values" = jsonb_strip_nulls(sv."values" || excluded."values"),
              updated_at = excluded.updated_at
          where excluded.window_end >= sv.window_end
        returning sv.user_id
      ),
      logged as (
        insert into change_log (topic, tenant_id, subject)
        select 'streaming', ${tenantId}, ${siteId} || E'\n' || string_agg(user_id::text, ',')
        from written
        having count(*) > 0
      )
      select r.u::text as user_id,
        case
          when not r.served then 'unknown_site'
          when r.found is null then 'unknown_user'
          when r.erased_at is not null then 'erased'
          when w.user_id is null then 'stale'
        end as reason
      from resolved r left join written w on w.user_id = r.u
    `);
    const out = new Map<string, WriteOutcome>();
    for (const row of rowsOf<{ user_id: string; reason: WriteOutcome }>(result)) out.set(row.user_id, row.reason);
    return out;
  }

  /** Every pipeline's stored row of each user at one site (decide's misses, batched). */
  async rowsOf(tenantId: string, siteId: string, userIds: readonly string[]): Promise<StoredRow[]> {
    const valid = userIds.filter(isUserId);
    if (valid.length === 0) return [];
    const result = await this.db.execute(sql`
      select user_id::text as user_id, pipeline, window_end, "values" from streaming_values
      where tenant_id = ${tenantId} and site_id = ${siteId}
        and user_id = any(${sql.param(valid)}::text[]::uuid[])
    `);
    return rowsOf<{ user_id: string; pipeline: string; window_end: number | string; values: unknown }>(result).map(
      (r) => ({
        userId: r.user_id,
        pipeline: r.pipeline,
        windowEnd: Number(r.window_end),
        values: (typeof r.values === "string" ? JSON.parse(r.values) : r.values) as Record<string, unknown>,
      }),
    );
  }

  /** Drops a user's values at every site (erasure). */
  async eraseUser(tenantId: string, userId: string): Promise<void> {
    await this.db.execute(
      sql`delete from streaming_values where tenant_id = ${tenantId} and user_id = ${userId}::uuid`,
    );
  }
}

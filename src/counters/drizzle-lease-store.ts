import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import type { Claim, LeaseStore } from "./quota-leases";

const usedByKey = (rows: { key_id: string; used: number | string }[]) =>
  new Map(rows.map((r) => [r.key_id, Number(r.used)]));

/**
 * The leases on Postgres (`rate_leases`): in a file of its own, so `QuotaLeases`, among the
 * modules keyed decide runs on, loads no drizzle.
 */
export class DrizzleLeaseStore implements LeaseStore {
  constructor(
    private readonly db: Db,
    /**
     * The length of the windows this store's leases count. Rows of every length share the table
     * (their keys differ); `prune` drops only this length's, so a 10-s window's prune never ends
     * a 60-s window early.
     */
    private readonly windowMs = 10_000,
  ) {}

  async claim(key: string, window: number, want: number, limit: number): Promise<Claim> {
    // ON CONFLICT's SET reads the row under its lock, as committed by any concurrent claim, so
    // `used` never passes `limit` however many processes claim at once.
    const first = Math.min(want, limit);
    const rows = rowsOf<{ granted: number | string; used: number | string }>(
      await this.db.execute(sql`
        insert into rate_leases as r (key_id, window_start, used, last_grant, window_ms)
        values (${key}, ${window}, ${first}, ${first}, ${this.windowMs})
        on conflict (key_id, window_start) do update
          set last_grant = least(${limit}::int - r.used, ${want}::int),
              used = r.used + least(${limit}::int - r.used, ${want}::int)
        returning last_grant as granted, used`),
    );
    const row = rows[0];
    return { granted: Number(row?.granted ?? 0), used: Number(row?.used ?? limit) };
  }

  async release(
    window: number,
    keys: readonly string[],
    amounts: readonly number[],
    limit: number,
    always: boolean,
  ): Promise<Map<string, number>> {
    return usedByKey(
      rowsOf(
        await this.db.execute(sql`update rate_leases as r set used = r.used - v.n
          from unnest(${sql.param(keys)}::text[], ${sql.param(amounts)}::int[]) as v(key_id, n)
          where r.key_id = v.key_id and r.window_start = ${window} and (${always} or r.used >= ${limit})
          returning r.key_id, r.used`),
      ),
    );
  }

  async usage(window: number, keys: readonly string[]): Promise<Map<string, number>> {
    return usedByKey(
      rowsOf(
        await this.db.execute(sql`select key_id, used from rate_leases
          where window_start = ${window} and key_id = any(${sql.param(keys)}::text[])`),
      ),
    );
  }

  async prune(window: number): Promise<void> {
    await this.db.execute(sql`delete from rate_leases where window_ms = ${this.windowMs} and window_start < ${window}`);
  }
}

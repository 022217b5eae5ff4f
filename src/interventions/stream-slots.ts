import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";

/**
 * The interventions stream's per-key cap for every process on one Postgres server together:
 * each process holds a row per key with the streams it has open (`stream_slots`).
 */
export interface StreamSlots {
  /**
   * Takes a slot for one more stream of `keyId` while the other live holders together and this
   * process' `mine` (its open streams and other opens in flight, as it knows them) are fewer than
   * `cap`: true, or false (nothing taken). Serialised per key across processes.
   */
  open(keyId: string, cap: number, mine: number): Promise<boolean>;
  /** This process now holds `mine` streams of `keyId` (one closed). */
  close(keyId: string, mine: number): Promise<void>;
  /**
   * Renews this process' rows with what it holds now (a heartbeat), drops its rows of keys it
   * holds no stream of, and deletes the rows of holders gone for `ttlMs`.
   */
  renew(held: ReadonlyMap<string, number>): Promise<void>;
}

export class DrizzleStreamSlots implements StreamSlots {
  /** This process' holder id: a new one at every start, so a restart never inherits a count. */
  readonly holder = randomUUID();

  constructor(
    private readonly db: Db,
    /** A holder not renewed for this long (three heartbeats) no longer counts: its process is gone. */
    private readonly ttlMs: number,
  ) {}

  /**
   * This process' own row counts only for the others: its writes may commit out of order (two
   * opens, or an open and a close, at once), so it may read high (never low: an open keeps the
   * higher figure) until the next heartbeat's renewal writes it exactly.
   */
  open(keyId: string, cap: number, mine: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // Under the lock, the next statement's snapshot sees every slot committed before it: two
      // processes opening a key's last slot at once take turns.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('svc.stream_slots'), hashtext(${keyId}))`);
      const rows = rowsOf<{ opened: number }>(
        await tx.execute(sql`with others as (
            select coalesce(sum(opened), 0) as n from stream_slots
            where key_id = ${keyId} and holder <> ${this.holder}
              and seen_at > now() - make_interval(secs => ${this.ttlMs / 1000}))
          insert into stream_slots as s (key_id, holder, opened, seen_at)
          select ${keyId}, ${this.holder}, ${mine + 1}, now() from others where others.n + ${mine} < ${cap}
          on conflict (key_id, holder) do update set opened = greatest(s.opened, excluded.opened), seen_at = now()
          returning s.opened`),
      );
      return rows.length > 0;
    });
  }

  async close(keyId: string, mine: number): Promise<void> {
    await this.db.execute(sql`update stream_slots set opened = ${mine}
      where key_id = ${keyId} and holder = ${this.holder}`);
  }

  async renew(held: ReadonlyMap<string, number>): Promise<void> {
    const keys = [...held.keys()];
    const counts = keys.map((k) => held.get(k) as number);
    await this.db.transaction(async (tx) => {
      if (keys.length > 0) {
        await tx.execute(sql`insert into stream_slots as s (key_id, holder, opened, seen_at)
          select u.key_id, ${this.holder}, u.n, now()
          from unnest(${sql.param(keys)}::text[], ${sql.param(counts)}::int[]) as u(key_id, n)
          on conflict (key_id, holder) do update set opened = excluded.opened, seen_at = excluded.seen_at`);
      }
      await tx.execute(sql`delete from stream_slots
        where (holder = ${this.holder} and not (key_id = any(${sql.param(keys)}::text[])))
          or seen_at < now() - make_interval(secs => ${this.ttlMs / 1000})`);
    });
  }
}

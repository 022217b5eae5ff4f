import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import type { Logger } from "../logger";

/** Keyed decide's window: 0 when admitted, else Retry-After seconds; a promise only while claiming. */
export interface KeyedRate {
  take(key: string, nowMs: number): number | Promise<number>;
}

/** What one claim got, and how much of the window every process together has claimed since. */
export interface Claim {
  readonly granted: number;
  readonly used: number;
}

export interface LeaseStore {
  /** Claims up to `want` of a key's window, never past `limit` in all (one statement). */
  claim(key: string, window: number, want: number, limit: number): Promise<Claim>;
  /** Drops the rows of windows before `window`. */
  prune(window: number): Promise<void>;
}

export class DrizzleLeaseStore implements LeaseStore {
  constructor(private readonly db: Db) {}

  async claim(key: string, window: number, want: number, limit: number): Promise<Claim> {
    // ON CONFLICT's SET reads the row under its lock, as committed by any concurrent claim, so
    // `used` never passes `limit` however many processes claim at once.
    const first = Math.min(want, limit);
    const rows = rowsOf<{ granted: number | string; used: number | string }>(
      await this.db.execute(sql`
        insert into rate_leases as r (key_id, window_start, used, last_grant)
        values (${key}, ${window}, ${first}, ${first})
        on conflict (key_id, window_start) do update
          set last_grant = least(${limit}::int - r.used, ${want}::int),
              used = r.used + least(${limit}::int - r.used, ${want}::int)
        returning last_grant as granted, used`),
    );
    const row = rows[0];
    return { granted: Number(row?.granted ?? 0), used: Number(row?.used ?? limit) };
  }

  async prune(window: number): Promise<void> {
    await this.db.execute(sql`delete from rate_leases where window_start < ${window}`);
  }
}

interface Lease {
  /** Admissions this process holds and has not spent. */
  left: number;
  /** What every process had claimed after this one's latest claim. */
  used: number;
  /** The window is claimed to its limit: once `left` is spent, refuse until it ends. */
  exhausted: boolean;
  /** The claim in flight, if any. */
  claiming: Promise<void> | null;
  /** The store failed a claim: this window falls back to a count of this process' own. */
  local: number | null;
  /** What this process admitted in the window (the fallback starts from it). */
  admitted: number;
}

/** The largest chunk one claim asks for: one round trip per this many requests at steady state. */
export const MAX_CHUNK = 100;
/** A claim asks for at most this fraction of what the window has left (every process together). */
const REMAINDER_SHARE = 16;
/** Below this much left in the window, a process claims only for a request that is waiting. */
const CLAIM_AHEAD_FROM = 8 * MAX_CHUNK;

/**
 * Keyed rate windows exact across processes and hosts on one Postgres (DESIGN.md's scale-out
 * path). A process claims a chunk of a key's window and spends it in memory; while the window has
 * plenty left it claims the next chunk in the background when half the last one is left, so a
 * request rarely waits for a claim. A chunk is at most a sixteenth of what the window has left
 * (and at most MAX_CHUNK), and near the window's end claims are made only for waiting requests,
 * so the chunks shrink towards one and little quota is left stranded in a process that gets no
 * more requests while another runs out (a false 429). Nothing is ever admitted past the limit: the sum of
 * every claim is capped by the upsert. A window claimed to its limit is refused in memory until it
 * ends (Retry-After to the second).
 *
 * When a claim fails or takes longer than the read deadline (the store is down or hung), that key's window falls back to a count of this process'
 * own, as if it served alone, so an outage degrades to per-process windows instead of refusing
 * decide; the failure is logged once per window.
 */
export class QuotaLeases implements KeyedRate {
  private readonly leases = new Map<string, Lease>();
  private currentWindow = -1;
  private warnedWindow = -1;
  /** Claims sent to the store (round trips), and windows of a key that fell back to this process. */
  claims = 0;
  fallbacks = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly store: LeaseStore,
    private readonly logger: Logger,
    /** A claim slower than this counts as failed (a hung store must not hold keyed decide). */
    private readonly claimDeadlineMs = 1_000,
  ) {}

  take(key: string, nowMs: number): number | Promise<number> {
    const window = Math.floor(nowMs / this.windowMs);
    if (window !== this.currentWindow) this.startWindow(window);
    let lease = this.leases.get(key);
    if (lease === undefined) {
      lease = { left: 0, used: 0, exhausted: false, claiming: null, local: null, admitted: 0 };
      this.leases.set(key, lease);
    }
    const answer = this.spend(key, lease, window, nowMs);
    return answer !== null ? answer : this.waitForClaim(key, lease, window, nowMs);
  }

  /**
   * Waits for a claim, then spends. Requests that queued behind one claim may outnumber its
   * grant: they claim again. Each claim grants at least one or finds the window full, so this ends.
   */
  private async waitForClaim(key: string, lease: Lease, window: number, nowMs: number): Promise<number> {
    for (;;) {
      await (lease.claiming ?? this.claim(key, lease, window));
      const answer = this.spend(key, lease, window, nowMs);
      if (answer !== null) return answer;
    }
  }

  /** Admits (0) or refuses (seconds) from what the lease holds; null when it must claim first. */
  private spend(key: string, lease: Lease, window: number, nowMs: number): number | null {
    if (lease.local !== null) {
      if (lease.local >= this.limit) return this.retryAfter(window, nowMs);
      lease.local += 1;
      lease.admitted += 1;
      return 0;
    }
    if (lease.left > 0) {
      lease.left -= 1;
      lease.admitted += 1;
      // Claim ahead only while the window has plenty left: near its end a claim ahead is what
      // strands quota in a process that may get no more requests while another runs out.
      if (
        !lease.exhausted &&
        lease.claiming === null &&
        this.limit - lease.used >= CLAIM_AHEAD_FROM &&
        lease.left * 2 < this.chunkFor(lease)
      )
        void this.claim(key, lease, window);
      return 0;
    }
    if (lease.exhausted) return this.retryAfter(window, nowMs);
    return null;
  }

  private chunkFor(lease: Lease): number {
    return Math.max(1, Math.min(MAX_CHUNK, Math.floor((this.limit - lease.used) / REMAINDER_SHARE)));
  }

  private claim(key: string, lease: Lease, window: number): Promise<void> {
    this.claims += 1;
    const claiming = this.deadline(this.store.claim(key, window, this.chunkFor(lease), this.limit)).then(
      (claim) => {
        lease.left += claim.granted;
        lease.used = claim.used;
        if (claim.used >= this.limit) lease.exhausted = true;
        lease.claiming = null;
      },
      (error) => {
        // Per-process from here to the window's end: what this process already admitted counts.
        lease.local = lease.admitted;
        this.fallbacks += 1;
        lease.claiming = null;
        if (this.warnedWindow !== window) {
          this.warnedWindow = window;
          this.logger.warn("rate window lease failed; counting this window per process", {
            error: String((error as Error)?.message ?? error),
          });
        }
      },
    );
    lease.claiming = claiming;
    return claiming;
  }

  /** The claim, or a rejection past the deadline; a claim that lands later only strands quota. */
  private deadline(claim: Promise<Claim>): Promise<Claim> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.claimDeadlineMs} ms`)), this.claimDeadlineMs);
    });
    return Promise.race([claim, late]).finally(() => clearTimeout(timer));
  }

  private startWindow(window: number): void {
    // Windows are aligned for every key, so a new window starts every key afresh.
    this.leases.clear();
    this.currentWindow = window;
    this.store.prune(window - 1).catch(() => {
      // Pruning is housekeeping: the next window tries again.
    });
  }

  private retryAfter(window: number, nowMs: number): number {
    const end = (window + 1) * this.windowMs;
    return Math.max(1, Math.ceil((end - nowMs) / 1000));
  }
}

/** The lease table in memory, for tests that run several "processes" over one store. */
export class MemoryLeaseStore implements LeaseStore {
  readonly rows = new Map<string, number>();
  claims = 0;
  failing = false;

  async claim(key: string, window: number, want: number, limit: number): Promise<Claim> {
    await Promise.resolve();
    if (this.failing) throw new Error("store unavailable");
    this.claims += 1;
    const id = `${key}\u0000${window}`;
    const used = this.rows.get(id) ?? 0;
    const granted = Math.max(0, Math.min(limit - used, want));
    this.rows.set(id, used + granted);
    return { granted, used: used + granted };
  }

  async prune(window: number): Promise<void> {
    for (const id of this.rows.keys()) if (Number(id.split("\u0000")[1]) < window) this.rows.delete(id);
  }
}

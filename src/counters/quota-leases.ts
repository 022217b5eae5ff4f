import type { Logger } from "../logger";

/** Keyed decide's window: 0 when admitted, else Retry-After seconds; a promise only while claiming. */
export interface KeyedRate {
  readonly limit: number;
  readonly windowMs: number;
  take(key: string, nowMs: number): number | Promise<number>;
  /** What is left of `key`'s window as this process knows it (reads; admits nothing). */
  remaining(key: string, nowMs: number): number;
}

/** What one claim got, and how much of the window every process together has claimed since. */
export interface Claim {
  readonly granted: number;
  readonly used: number;
}

export interface LeaseStore {
  /** Claims up to `want` of a key's window, never past `limit` in all (one statement). */
  claim(key: string, window: number, want: number, limit: number): Promise<Claim>;
  /**
   * Hands back `amounts[i]` of `keys[i]`'s window where the window is claimed to its limit
   * (another process may be refusing), or anyway when `always`. Answers each key handed back
   * with what is claimed after.
   */
  release(
    window: number,
    keys: readonly string[],
    amounts: readonly number[],
    limit: number,
    always: boolean,
  ): Promise<Map<string, number>>;
  /** What every process together has claimed of these keys' windows (a key never claimed: absent). */
  usage(window: number, keys: readonly string[]): Promise<Map<string, number>>;
  /** Drops the rows of windows before `window`. */
  prune(window: number): Promise<void>;
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
  /** What the latest claim asked for (0 before the first): the next asks for twice as much. */
  chunk: number;
  /** A request came since the last settle: the lease is in use, its quota is not handed back. */
  busy: boolean;
}

/** The largest chunk one claim asks for: one round trip per this many requests at steady state. */
export const MAX_CHUNK = 100;
/** A claim asks for at most this fraction of what the window has left (every process together). */
const REMAINDER_SHARE = 16;
/** Below this much left in the window, a process claims only for a request that is waiting. */
const CLAIM_AHEAD_FROM = 8 * MAX_CHUNK;
/**
 * A process' first claim of a key in a window asks for this many; each claim doubles the next
 * (slow start), so a process that serves a key only now and then holds little of it.
 */
export const FIRST_CHUNK = 8;
/** The end of a window in which idle quota is handed back whether or not the window is full. */
export const ENDGAME_MS = 2_000;
/** A claim asks for at most this fraction of what the process will need until the window ends. */
const DEMAND_SHARE = 2;
/** How often idle quota is handed back and refusing windows look again (`QuotaLeases.settle`). */
export const SETTLE_MS = 500;

/**
 * Keyed rate windows exact across processes and hosts on one Postgres (DESIGN.md's scale-out
 * path). A process claims a chunk of a key's window and spends it in memory; while the window has
 * plenty left it claims the next chunk in the background when half the last one is left, so a
 * request rarely waits for a claim. Nothing is ever admitted past the limit: the sum of every
 * claim is capped by the upsert. A window claimed to its limit is refused in memory (Retry-After
 * to the second) until it ends or quota comes back.
 *
 * What a process holds and does not spend before the window ends is refused to the others (a
 * false 429, and fewer than the limit admitted), so chunks stay small where that could happen: a
 * process' first chunk of a key is FIRST_CHUNK and each next one twice the last, at most
 * MAX_CHUNK, a sixteenth of what the window has left, and half of what this process will need
 * until the window ends at its own rate (the chunk shrinks with the window's remaining time);
 * near the window's end claims are made only for waiting requests. And every SETTLE_MS
 * (`settle`) a process hands back what it holds of each key it got no request for since the last
 * settle, where the window is claimed to its limit or in the window's last ENDGAME_MS (one
 * statement for all such keys); and looks again at the windows it refuses from memory (one
 * statement), claiming again once some came back.
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
  /** Quota handed back to other processes (admissions), and settles sent to the store. */
  returned = 0;
  settles = 0;
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  private settling: Promise<void> | null = null;
  private stopped = false;
  private readonly settleMs: number;
  private readonly now: () => number;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly store: LeaseStore,
    private readonly logger: Logger,
    /** A claim slower than this counts as failed (a hung store must not hold keyed decide). */
    private readonly claimDeadlineMs = 1_000,
    options: {
      /** How often `settle` runs while a lease holds quota or refuses; 0: only when called (tests). */
      settleMs?: number;
      /** The clock `settle` reads (the one `take` is given). */
      now?: () => number;
    } = {},
  ) {
    this.settleMs = options.settleMs ?? SETTLE_MS;
    this.now = options.now ?? Date.now;
  }

  take(key: string, nowMs: number): number | Promise<number> {
    const window = Math.floor(nowMs / this.windowMs);
    if (window !== this.currentWindow) this.startWindow(window);
    let lease = this.leases.get(key);
    if (lease === undefined) {
      lease = {
        left: 0,
        used: 0,
        exhausted: false,
        claiming: null,
        local: null,
        admitted: 0,
        chunk: 0,
        busy: true,
      };
      this.leases.set(key, lease);
    } else lease.busy = true;
    const answer = this.spend(key, lease, window, nowMs);
    return answer !== null ? answer : this.waitForClaim(key, lease, window, nowMs);
  }

  /**
   * What this process may still admit of `key`'s window as far as it knows: what it holds, and
   * the window less every claim it has seen (per process after a failed claim).
   */
  remaining(key: string, nowMs: number): number {
    const lease = this.leases.get(key);
    if (Math.floor(nowMs / this.windowMs) !== this.currentWindow || lease === undefined) return this.limit;
    if (lease.local !== null) return Math.max(0, this.limit - lease.local);
    return Math.max(0, this.limit - lease.used + lease.left);
  }

  /**
   * Waits for a claim, then spends. Requests that queued behind one claim may outnumber its
   * grant: they claim again. Each claim grants at least one or finds the window full, so this ends.
   */
  private async waitForClaim(key: string, lease: Lease, window: number, nowMs: number): Promise<number> {
    for (;;) {
      await (lease.claiming ?? this.claim(key, lease, window, Math.max(1, this.chunkFor(lease, window, nowMs))));
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
      // strands quota in a process that may get no more requests while another runs out. Nor
      // when what is held covers what this process will need until the window ends.
      if (
        !lease.exhausted &&
        lease.claiming === null &&
        this.limit - lease.used >= CLAIM_AHEAD_FROM &&
        lease.left * 2 < lease.chunk
      ) {
        const want = this.chunkFor(lease, window, nowMs);
        if (want > 0) void this.claim(key, lease, window, want);
      }
      return 0;
    }
    // Refused in memory, unless a settle is handing back this lease's quota: wait for it.
    if (lease.exhausted && lease.claiming === null) return this.retryAfter(window, nowMs);
    return null;
  }

  /**
   * The next claim (0 or less: what is held is enough): twice the last (slow start), at most
   * MAX_CHUNK, a sixteenth of what the window has left, and half of what this process will need
   * until the window ends beyond what it holds, at its own rate in the window so far (the
   * waiting request counted). So the chunk shrinks with the window's remaining time as well as
   * its remaining quota, and a process serving a key slowly never holds more than it can spend.
   */
  private chunkFor(lease: Lease, window: number, nowMs: number): number {
    const next = lease.chunk === 0 ? FIRST_CHUNK : Math.min(MAX_CHUNK, lease.chunk * 2);
    const share = Math.max(1, Math.floor((this.limit - lease.used) / REMAINDER_SHARE));
    const start = window * this.windowMs;
    const need = ((lease.admitted + 1) * (start + this.windowMs - nowMs)) / Math.max(1, nowMs - start);
    return Math.min(next, share, Math.ceil(need / DEMAND_SHARE) - lease.left);
  }

  private claim(key: string, lease: Lease, window: number, want: number): Promise<void> {
    this.claims += 1;
    // A chunk shrunk by the window's remainder grows again from there (by doubling), not from
    // the largest asked so far.
    lease.chunk = want;
    const claiming = this.deadline(this.store.claim(key, window, want, this.limit)).then(
      (claim) => {
        lease.left += claim.granted;
        lease.used = claim.used;
        if (claim.used >= this.limit) lease.exhausted = true;
        lease.claiming = null;
        this.armSettle();
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
  private deadline<T>(claim: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.claimDeadlineMs} ms`)), this.claimDeadlineMs);
    });
    return Promise.race([claim, late]).finally(() => clearTimeout(timer));
  }

  /**
   * Hands back the quota of keys that got no request since the last settle, where their window is
   * claimed to its limit; and looks again at the windows refused from memory, so that a process
   * refusing claims what another handed back. At most two statements, whatever the number of
   * keys; none when no lease holds quota or refuses. Bounded by the claims' deadline; when it
   * fails, the quota offered back is given up (it may have been taken back).
   */
  settle(nowMs = this.now()): Promise<void> {
    if (this.settling !== null) return this.settling;
    const window = this.currentWindow;
    // In the window's last ENDGAME_MS an idle lease hands its quota back even while the window is
    // not full: whoever still gets requests claims it, before it is too late to hand back.
    const endgame = nowMs >= (window + 1) * this.windowMs - ENDGAME_MS;
    const idle: [string, Lease, number][] = [];
    const refusing: [string, Lease][] = [];
    for (const [key, lease] of this.leases) {
      const busy = lease.busy;
      lease.busy = false;
      if (lease.local !== null || lease.claiming !== null) continue;
      if (lease.left > 0) {
        if (!busy) idle.push([key, lease, lease.left]);
      } else if (lease.exhausted) refusing.push([key, lease]);
    }
    if (idle.length === 0 && refusing.length === 0) {
      // Leases in use still hold quota: look again in SETTLE_MS.
      this.armSettle();
      return Promise.resolve();
    }
    this.settles += 1;
    // Held back while the statement runs: a request meanwhile waits for it as for a claim.
    for (const [, lease, n] of idle) lease.left -= n;
    const settling = this.deadline(
      Promise.all([
        idle.length === 0
          ? new Map<string, number>()
          : this.store.release(
              window,
              idle.map(([key]) => key),
              idle.map(([, , n]) => n),
              this.limit,
              endgame,
            ),
        refusing.length === 0
          ? new Map<string, number>()
          : this.store.usage(
              window,
              refusing.map(([key]) => key),
            ),
      ]),
    ).then(
      ([released, used]) => {
        for (const [key, lease, n] of idle) {
          const after = released.get(key);
          if (after === undefined) lease.left += n;
          else {
            this.returned += n;
            lease.used = after;
            lease.exhausted = false;
          }
        }
        for (const [key, lease] of refusing) {
          const now = used.get(key);
          if (now === undefined || now >= this.limit) continue;
          lease.used = now;
          lease.exhausted = false;
        }
      },
      () => {
        // Failed or late: the hand-back may yet commit, so the quota is not spent here any more
        // (at worst it is stranded; never admitted twice).
      },
    );
    const done = settling.finally(() => {
      for (const [, lease] of idle) if (lease.claiming === done) lease.claiming = null;
      this.settling = null;
      this.armSettle();
    });
    for (const [, lease] of idle) lease.claiming = done;
    this.settling = done;
    return done;
  }

  /** Stops the settle timer and waits for a settle in flight (the server is stopping). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    await this.settling;
  }

  /** Runs `settle` in SETTLE_MS while some lease holds quota or refuses from memory. */
  private armSettle(): void {
    if (this.settleMs <= 0 || this.stopped || this.settleTimer !== null || this.settling !== null) return;
    let waiting = false;
    for (const lease of this.leases.values()) {
      if (lease.local === null && (lease.left > 0 || lease.exhausted)) {
        waiting = true;
        break;
      }
    }
    if (!waiting) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = null;
      void this.settle();
    }, this.settleMs);
    (this.settleTimer as { unref?: () => void }).unref?.();
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

  async release(
    window: number,
    keys: readonly string[],
    amounts: readonly number[],
    limit: number,
    always: boolean,
  ): Promise<Map<string, number>> {
    await Promise.resolve();
    if (this.failing) throw new Error("store unavailable");
    const out = new Map<string, number>();
    keys.forEach((key, i) => {
      const id = `${key}\u0000${window}`;
      const used = this.rows.get(id);
      if (used === undefined || (!always && used < limit)) return;
      this.rows.set(id, used - (amounts[i] as number));
      out.set(key, used - (amounts[i] as number));
    });
    return out;
  }

  async usage(window: number, keys: readonly string[]): Promise<Map<string, number>> {
    await Promise.resolve();
    if (this.failing) throw new Error("store unavailable");
    const out = new Map<string, number>();
    for (const key of keys) {
      const used = this.rows.get(`${key}\u0000${window}`);
      if (used !== undefined) out.set(key, used);
    }
    return out;
  }

  async prune(window: number): Promise<void> {
    for (const id of this.rows.keys()) if (Number(id.split("\u0000")[1]) < window) this.rows.delete(id);
  }
}

/**
 * A full garbage collection once a busy server goes quiet, so the memory a burst of requests left
 * behind goes back to the OS within seconds instead of whenever the collector's own timers get to
 * it (docs/performance.md, "Memory": a million-subject load left about 30 MB of garbage, freed 10
 * to 60 s later on its own).
 *
 * It never runs under load: only when no request was answered for `quietMs` and at least
 * `minRequests` were answered since the last such collection, so a server with a trickle of
 * traffic does not collect after every gap. A request that arrives during the collection waits
 * for it (tens of milliseconds for a heap of a few hundred MB), which is why it waits for quiet.
 */
export interface IdleCollection {
  /** Looks now (the timer calls it every `quietMs / 2`). */
  check(): void;
  stop(): void;
}

export interface IdleCollectionOptions {
  quietMs?: number;
  minRequests?: number;
  now?: () => number;
  /** The collection itself (tests pass their own). */
  collect?: () => void;
  /** false: no timer, only `check` (tests). */
  timer?: boolean;
}

export const IDLE_QUIET_MS = 1_000;
export const IDLE_MIN_REQUESTS = 10_000;

/** Watches `answered` (a running count of answers) and collects once after each burst. */
export function collectWhenIdle(answered: () => number, options: IdleCollectionOptions = {}): IdleCollection {
  const quietMs = options.quietMs ?? IDLE_QUIET_MS;
  const minRequests = options.minRequests ?? IDLE_MIN_REQUESTS;
  const now = options.now ?? Date.now;
  const collect = options.collect ?? (() => Bun.gc(true));
  let seen = answered();
  let changedAt = now();
  let atLastRun = seen;
  const check = () => {
    const count = answered();
    const at = now();
    if (count !== seen) {
      seen = count;
      changedAt = at;
      return;
    }
    if (at - changedAt >= quietMs && count - atLastRun >= minRequests) {
      atLastRun = count;
      collect();
    }
  };
  const timer = options.timer === false ? undefined : setInterval(check, Math.max(1, quietMs / 2));
  timer?.unref();
  return {
    check,
    stop: () => clearInterval(timer),
  };
}

import { LRUCache } from "lru-cache";

/**
 * The keyed mount's answers, per API key, site and full URL, while their age by the injected clock
 * is at most `ttlMs`, held in `lru-cache` (at most `maxEntries`, the least recently used going first). Single-flight:
 * concurrent misses of one key share one computation (one engine call). A failed computation is
 * never kept. A hit is answered synchronously (lru-cache's own `fetch` always answers a promise).
 */
export class AnswerCache<T extends object | string> {
  private readonly entries: LRUCache<string, T>;
  private readonly inflight = new Map<string, Promise<T>>();

  constructor(ttlMs: number, maxEntries: number, now: () => number) {
    // ttlResolution 0: read the injected clock on every check, never a cached reading and its timer.
    this.entries = new LRUCache<string, T>({ max: maxEntries, ttl: ttlMs, ttlResolution: 0, perf: { now } });
  }

  get(key: string, compute: () => Promise<T>): T | Promise<T> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const flying = this.inflight.get(key);
    if (flying !== undefined) return flying;
    const computed = compute()
      .then((value) => {
        this.entries.set(key, value);
        return value;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, computed);
    return computed;
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * The keyed mount's answers, per API key, site and full URL, for `ttlMs` by the injected clock.
 * Single-flight: concurrent misses of one key share one computation (one engine call). A failed
 * computation is never kept. Bounded: past `maxEntries` the oldest entry goes.
 */
export class AnswerCache<T> {
  private readonly entries = new Map<string, { at: number; value: T }>();
  private readonly inflight = new Map<string, Promise<T>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get(key: string, compute: () => Promise<T>): T | Promise<T> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      if (this.now() - hit.at < this.ttlMs) return hit.value;
      this.entries.delete(key);
    }
    const flying = this.inflight.get(key);
    if (flying !== undefined) return flying;
    const computed = compute()
      .then((value) => {
        this.entries.set(key, { at: this.now(), value });
        if (this.entries.size > this.maxEntries) {
          const oldest = this.entries.keys().next().value;
          if (oldest !== undefined) this.entries.delete(oldest);
        }
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

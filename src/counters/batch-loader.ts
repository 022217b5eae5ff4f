/**
 * Single-flight, batched loading of missing counter entries: every key asked for in the same
 * tick is read with one query, and a key already being loaded is not read twice.
 */
export class BatchLoader<V> {
  private readonly inFlight = new Map<string, Promise<V>>();
  private queue: { key: string; resolve: (v: V) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    private readonly loadMany: (keys: string[]) => Promise<Map<string, V>>,
    private readonly empty: () => V,
  ) {}

  load(key: string): Promise<V> {
    const existing = this.inFlight.get(key);
    if (existing) return existing;
    const promise = new Promise<V>((resolve, reject) => {
      this.queue.push({ key, resolve, reject });
    });
    this.inFlight.set(key, promise);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => void this.run());
    }
    return promise;
  }

  private async run(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    try {
      const found = await this.loadMany(batch.map((b) => b.key));
      for (const item of batch) item.resolve(found.get(item.key) ?? this.empty());
    } catch (error) {
      for (const item of batch) item.reject(error);
    } finally {
      for (const item of batch) this.inFlight.delete(item.key);
    }
  }
}

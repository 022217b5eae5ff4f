/**
 * Single-flight, batched loading of missing entries: keys asked for in the same tick are read
 * with one query, and a key already being loaded is not read twice. At most `maxInFlight`
 * batches run at once; keys asked for while they run wait and go together in the next batch, so
 * under load (many new subjects at once) reads grow larger instead of more numerous.
 */
export class BatchLoader<V> {
  private readonly inFlight = new Map<string, Promise<V>>();
  private queue: { key: string; resolve: (v: V) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private running = 0;

  constructor(
    private readonly loadMany: (keys: string[]) => Promise<Map<string, V>>,
    private readonly empty: () => V,
    private readonly maxInFlight = 2,
  ) {}

  load(key: string): Promise<V> {
    const existing = this.inFlight.get(key);
    if (existing) return existing;
    const promise = new Promise<V>((resolve, reject) => {
      this.queue.push({ key, resolve, reject });
    });
    this.inFlight.set(key, promise);
    this.schedule();
    return promise;
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.running >= this.maxInFlight) return;
    this.scheduled = true;
    queueMicrotask(() => void this.run());
  }

  private async run(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    this.running += 1;
    try {
      const found = await this.loadMany(batch.map((b) => b.key));
      for (const item of batch) item.resolve(found.get(item.key) ?? this.empty());
    } catch (error) {
      for (const item of batch) item.reject(error);
    } finally {
      for (const item of batch) this.inFlight.delete(item.key);
      this.running -= 1;
      this.schedule();
    }
  }
}

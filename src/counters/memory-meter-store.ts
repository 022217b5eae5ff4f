import type { MeterName, MeterRows, MeterStore, SeenAdmission } from "./meter-store";
import { type Loaded, meterKey, SEP } from "./meter-values";

/**
 * The counters' rows in maps, for tests of the counters' own logic (memory layout, flush
 * protocol, eviction, retiring past periods) without a database. `down` makes every call fail as
 * an unreachable store would. Postgres's data errors are not imitated: those tests use the real
 * stores.
 */
export class MemoryMeterStore implements MeterStore {
  down = false;
  /** Calls made, by kind, so a test can tell a read that was skipped from one that was made. */
  readonly calls = { load: 0, write: 0 };
  private readonly ids = new Map<string, number>();
  private readonly counts = new Map<string, number>();
  private readonly seen = new Map<string, Set<string>>();

  async storedKeys(): Promise<string[]> {
    this.check();
    return [...new Set([...this.counts.keys(), ...this.seen.keys()])];
  }

  async load(keys: readonly string[]): Promise<Map<string, Loaded>> {
    this.check();
    this.calls.load += 1;
    const found = new Map<string, Loaded>();
    for (const key of keys) {
      const count = this.counts.get(key);
      const items = this.seen.get(key);
      if (count === undefined && items === undefined) continue;
      found.set(key, { count: count ?? 0, items: items ? [...items] : null });
    }
    return found;
  }

  async keyId(name: MeterName): Promise<number> {
    this.check();
    const id = [name.tenant, name.site, name.meter, name.period].join(SEP);
    let known = this.ids.get(id);
    if (known === undefined) {
      known = this.ids.size + 1;
      this.ids.set(id, known);
    }
    return known;
  }

  async write(parts: readonly MeterRows[]): Promise<number[]> {
    this.check();
    this.calls.write += 1;
    const keyIds: number[] = [];
    for (const part of parts) {
      keyIds.push(part.keyId ?? (await this.keyId(part.name)));
      const { tenant, site, meter, period } = part.name;
      part.subjects.forEach((subject, i) => {
        const key = meterKey(tenant, site, meter, subject, period);
        if (!part.seenKind) this.counts.set(key, (this.counts.get(key) ?? 0) + (part.deltas[i] as number));
        else {
          const items = this.seen.get(key) ?? new Set<string>();
          items.add(part.items[i] as string);
          this.seen.set(key, items);
        }
      });
    }
    return keyIds;
  }

  async admitSeen(name: MeterName, subject: string, item: string, allowance: number): Promise<SeenAdmission> {
    this.check();
    const key = meterKey(name.tenant, name.site, name.meter, subject, name.period);
    const keyId = await this.keyId(name);
    const items = this.seen.get(key) ?? new Set<string>();
    const before = items.size;
    if (items.has(item)) return { outcome: "member", before, keyId };
    if (before >= allowance) return { outcome: "full", before, keyId };
    items.add(item);
    this.seen.set(key, items);
    return { outcome: "added", before, keyId };
  }

  async admitCount(name: MeterName, subject: string, allowance: number): Promise<SeenAdmission> {
    this.check();
    const key = meterKey(name.tenant, name.site, name.meter, subject, name.period);
    const keyId = await this.keyId(name);
    const before = this.counts.get(key) ?? 0;
    if (before >= allowance) return { outcome: "full", before: allowance, keyId };
    this.counts.set(key, before + 1);
    return { outcome: "added", before, keyId };
  }

  private check(): void {
    if (this.down) throw new Error("memory meter store: down");
  }
}

import { randomUUID } from "node:crypto";
import type { ClaimedJob, JobStore, KindStats, NewJob } from "./store";

interface Row {
  readonly id: number;
  readonly kind: string;
  readonly key: string;
  payload: unknown;
  state: "queued" | "running" | "dead";
  runAt: number;
  attempts: number;
  dirty: boolean;
  lease: string | null;
  leaseUntil: number | null;
  lastError: string | null;
  createdAt: number;
}

/** The durable job queue in memory, with the drizzle store's state moves; held to it by one contract suite. */
export class MemoryJobStore implements JobStore {
  private readonly rows = new Map<string, Row>();
  private nextId = 1;

  private static key(kind: string, key: string): string {
    return `${kind}\u0000${key}`;
  }

  private byId(job: ClaimedJob): Row | undefined {
    const row = this.rows.get(MemoryJobStore.key(job.kind, job.key));
    return row?.id === job.id && row.lease === job.lease ? row : undefined;
  }

  async enqueue(rows: readonly NewJob[], now: number): Promise<void> {
    // As the drizzle store's one statement: the last notice per key wins.
    const unique = new Map<string, NewJob>();
    for (const row of rows) unique.set(MemoryJobStore.key(row.kind, row.key), row);
    for (const r of unique.values()) {
      const key = MemoryJobStore.key(r.kind, r.key);
      const held = this.rows.get(key);
      if (held === undefined) {
        this.rows.set(key, {
          id: this.nextId++,
          kind: r.kind,
          key: r.key,
          payload: structuredClone(r.payload ?? null),
          state: "queued",
          runAt: r.runAt,
          attempts: 0,
          dirty: false,
          lease: null,
          leaseUntil: null,
          lastError: null,
          createdAt: now,
        });
        continue;
      }
      // As the drizzle store's upsert: queued keeps its first time, running reruns, dead revives.
      held.payload = structuredClone(r.payload ?? null);
      held.runAt = held.state === "queued" ? Math.min(held.runAt, r.runAt) : r.runAt;
      held.dirty = held.dirty || held.state === "running";
      if (held.state === "dead") {
        held.attempts = 0;
        held.createdAt = now;
        held.state = "queued";
      }
    }
  }

  async claim(kinds: readonly string[], now: number, limit: number, leaseMs: number): Promise<ClaimedJob[]> {
    const wanted = new Set(kinds);
    const lease = randomUUID();
    const due = [...this.rows.values()]
      .filter(
        (r) =>
          wanted.has(r.kind) &&
          ((r.state === "queued" && r.runAt <= now) ||
            (r.state === "running" && r.leaseUntil !== null && r.leaseUntil <= now)),
      )
      .sort((a, b) => a.runAt - b.runAt || a.id - b.id)
      .slice(0, Math.max(0, limit));
    return due.map((r) => {
      r.state = "running";
      r.attempts++;
      r.dirty = false;
      r.lease = lease;
      r.leaseUntil = now + leaseMs;
      return { id: r.id, kind: r.kind, key: r.key, payload: structuredClone(r.payload), attempts: r.attempts, lease };
    });
  }

  async complete(job: ClaimedJob): Promise<void> {
    const row = this.byId(job);
    if (row === undefined) return;
    if (!row.dirty) {
      this.rows.delete(MemoryJobStore.key(row.kind, row.key));
      return;
    }
    Object.assign(row, { state: "queued", dirty: false, attempts: 0, lease: null, leaseUntil: null, lastError: null });
  }

  async fail(job: ClaimedJob, error: string, retryAt: number | null): Promise<void> {
    const row = this.byId(job);
    if (row === undefined) return;
    const dirty = row.dirty;
    row.state = retryAt === null && !dirty ? "dead" : "queued";
    if (!dirty) row.runAt = retryAt ?? 0;
    if (dirty) row.attempts = 0;
    row.dirty = false;
    row.lease = null;
    row.leaseUntil = null;
    row.lastError = error.slice(0, 500);
  }

  /** The last error recorded on each row (what the drizzle store keeps in `last_error`). */
  lastErrors(): (string | null)[] {
    return [...this.rows.values()].map((r) => r.lastError);
  }

  async nextDue(kinds: readonly string[]): Promise<number> {
    const wanted = new Set(kinds);
    let next = Number.POSITIVE_INFINITY;
    for (const r of this.rows.values()) {
      if (!wanted.has(r.kind) || r.state === "dead") continue;
      const at = r.state === "queued" ? r.runAt : r.leaseUntil;
      if (at !== null && at < next) next = at;
    }
    return next;
  }

  async stats(kinds: readonly string[], keyPrefix?: string): Promise<KindStats[]> {
    return kinds.map((kind) => {
      let queued = 0;
      let running = 0;
      let dead = 0;
      let oldest = Number.POSITIVE_INFINITY;
      for (const r of this.rows.values()) {
        if (r.kind !== kind || (keyPrefix !== undefined && !r.key.startsWith(keyPrefix))) continue;
        if (r.state === "dead") dead++;
        else {
          if (r.state === "queued") queued++;
          else running++;
          oldest = Math.min(oldest, r.createdAt);
        }
      }
      return {
        kind,
        queued,
        running,
        dead,
        depth: queued + running,
        oldest: oldest === Number.POSITIVE_INFINITY ? null : new Date(oldest).toISOString(),
      };
    });
  }
}

import type { Change } from "../changes/change-feed";
import type { SiteRegistry, SiteState } from "../sites/registry";
import type { StreamSlots } from "./stream-slots";

/**
 * What may have changed a decision (docs/interventions.md). An event says what changed, never
 * the decision: the subscriber decides again for the subjects it names.
 */
export type InterventionEvent =
  | { type: "deploy"; site: string; document: "live" | "preview"; version: number | null }
  | { type: "grants"; userId: string }
  | { type: "gift"; giftId: string }
  | { type: "streaming"; userIds: string[] }
  | { type: "meter_period"; meter: string; period: string }
  /** The Last-Event-ID given is no longer in the resume window: decide again for everyone. */
  | { type: "reset"; reason: "resume_window_passed" };

/** An event as the stream writes it, with the subjects it concerns (null: every subject of the site). */
interface Buffered {
  readonly id: string;
  readonly event: InterventionEvent;
  readonly subjects: readonly string[] | null;
  readonly at: number;
}

/** One open stream. */
export interface Listener {
  readonly tenantId: string;
  readonly siteId: string;
  readonly keyId: string;
  /** When the key expires (epoch ms), or null: the stream closes then, as on revocation. */
  readonly keyExpiresAt: number | null;
  /** Null: the whole site. */
  readonly subjects: ReadonlySet<string> | null;
  /** Writes one SSE frame (already formatted); false when the stream has gone. */
  send(frame: string): void;
  close(): void;
}

export interface HubOptions {
  readonly heartbeatMs: number;
  readonly streamsPerKey: number;
  /** How long (and how many events per site) a stream may resume with Last-Event-ID. */
  readonly resumeMs: number;
  readonly resumeEvents: number;
  readonly now: () => number;
  /**
   * The cap across processes (a Postgres server): each open takes a slot of the key's cap from
   * Postgres, renewed at every heartbeat. Null: per process (the embedded store, one process).
   */
  readonly slots?: StreamSlots | null;
}

const SEP = "\u0001";
/** The longest delay setTimeout takes (about 24.8 days); a later expiry is timed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/** One SSE frame; `data` is one JSON line, so no field can break the frame. */
function sseFrame(id: string, event: InterventionEvent): string {
  return `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * The interventions stream's process-wide side: open streams by site, a short buffer of recent
 * events per site for `Last-Event-ID` resume, heartbeats and meter period rollovers on one timer
 * that runs only while a stream is open. Events come from the change feed (every process applies
 * every change), so a subscriber may be served by any process; event ids of changes are the
 * change log's ids and agree across processes. Keyed decide never calls into it.
 */
export class InterventionHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly byKey = new Map<string, number>();
  private readonly buffers = new Map<string, Buffered[]>();
  /** When each site last had a stream open: it buffers events for resume until resumeMs after. */
  private readonly listenedAt = new Map<string, number>();
  private readonly periods = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | null = null;
  /** A timer per stream whose key expires, closing it at the expiry. */
  private readonly expiries = new Map<Listener, ReturnType<typeof setTimeout>>();
  private open = 0;
  /** Opens of a key waiting for their slot (`admit`): counted with the key's streams. */
  private readonly opening = new Map<string, number>();

  constructor(
    private readonly registry: SiteRegistry,
    readonly options: HubOptions,
  ) {}

  /** Open streams of a key (for its cap). */
  streamsOf(keyId: string): number {
    return this.byKey.get(keyId) ?? 0;
  }

  /**
   * Whether one more stream of the key may open: under the cap in this process and, with slots
   * (a Postgres server), for every process together. Should Postgres be unreachable, the cap
   * holds per process (the store fails at once, `StoreGate`). The caller adds the stream next.
   */
  admit(keyId: string): boolean | Promise<boolean> {
    const cap = this.options.streamsPerKey;
    const pending = this.opening.get(keyId) ?? 0;
    const mine = this.streamsOf(keyId) + pending;
    if (mine >= cap) return false;
    const slots = this.options.slots;
    if (slots === undefined || slots === null) return true;
    this.opening.set(keyId, pending + 1);
    const done = () => {
      const left = (this.opening.get(keyId) ?? 1) - 1;
      if (left <= 0) this.opening.delete(keyId);
      else this.opening.set(keyId, left);
    };
    return slots.open(keyId, cap, mine).then(
      (taken) => {
        done();
        return taken;
      },
      () => {
        done();
        return true;
      },
    );
  }

  /**
   * Adds a stream and answers what it missed since `lastEventId`: the buffered events after it,
   * or a `reset` event when that id has left the window (nothing when no id was given).
   */
  add(listener: Listener, lastEventId: string | null): string[] {
    const site = listener.tenantId + SEP + listener.siteId;
    let set = this.listeners.get(site);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(site, set);
      this.rememberPeriods(listener.tenantId, listener.siteId);
    }
    set.add(listener);
    this.byKey.set(listener.keyId, this.streamsOf(listener.keyId) + 1);
    if (listener.keyExpiresAt !== null) this.closeAtExpiry(listener);
    this.listenedAt.set(site, this.options.now());
    this.open++;
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.options.heartbeatMs);
      (this.timer as { unref?: () => void }).unref?.();
    }
    if (lastEventId === null) return [];
    const buffer = this.buffers.get(site) ?? [];
    const at = buffer.findIndex((b) => b.id === lastEventId);
    if (at === -1) return [sseFrame(`reset-${this.options.now()}`, { type: "reset", reason: "resume_window_passed" })];
    return buffer
      .slice(at + 1)
      .filter((b) => concerns(listener, b.subjects))
      .map((b) =>
        b.event.type === "streaming" && listener.subjects !== null
          ? sseFrame(b.id, { type: "streaming", userIds: b.event.userIds.filter((u) => listener.subjects?.has(u)) })
          : sseFrame(b.id, b.event),
      );
  }

  remove(listener: Listener): void {
    const site = listener.tenantId + SEP + listener.siteId;
    const set = this.listeners.get(site);
    if (set === undefined || !set.delete(listener)) return;
    if (set.size === 0) this.listeners.delete(site);
    const expiry = this.expiries.get(listener);
    if (expiry !== undefined) {
      clearTimeout(expiry);
      this.expiries.delete(listener);
    }
    const left = this.streamsOf(listener.keyId) - 1;
    if (left <= 0) this.byKey.delete(listener.keyId);
    else this.byKey.set(listener.keyId, left);
    // A failed give-back is corrected at the next heartbeat's renewal.
    this.options.slots
      ?.close(listener.keyId, Math.max(0, left) + (this.opening.get(listener.keyId) ?? 0))
      .catch(() => {});
    this.listenedAt.set(site, this.options.now());
    this.open--;
    if (this.open === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /**
   * Closes a stream when its key expires, as revocation does: a timer at the expiry (by the hub's
   * clock; re-armed while the clock has not reached it), and every tick checks again.
   */
  private closeAtExpiry(listener: Listener): void {
    const left = (listener.keyExpiresAt as number) - this.options.now();
    const timer = setTimeout(
      () => {
        this.expiries.delete(listener);
        if (left <= 0) listener.close();
        else this.closeAtExpiry(listener);
      },
      Math.min(Math.max(left, 0), MAX_TIMER_MS),
    );
    (timer as { unref?: () => void }).unref?.();
    this.expiries.set(listener, timer);
  }

  /** Closes every stream (shutdown). */
  closeAll(): void {
    for (const set of [...this.listeners.values()]) for (const l of [...set]) l.close();
  }

  /** The site as it was before a change is applied (the deploy event compares the two). */
  before(change: Change): SiteState | undefined {
    return change.topic === "site" ? this.registry.site(change.tenantId, change.subject) : undefined;
  }

  /** A change the feed applied in this process: the events it makes for the sites it touches. */
  onChange(change: Change & { id?: number }, before: SiteState | undefined): void {
    if (this.listenedAt.size === 0) return;
    const id = `c${change.id ?? `${this.options.now()}`}`;
    switch (change.topic) {
      case "site": {
        const after = this.registry.site(change.tenantId, change.subject);
        if (after === undefined) return;
        if (after.live !== before?.live) {
          const event = { type: "deploy", site: after.id, document: "live", version: after.liveVersion } as const;
          this.emit(change.tenantId, after.id, id, event, null);
          this.rememberPeriods(change.tenantId, after.id);
        }
        if (after.preview !== before?.preview) {
          const event = { type: "deploy", site: after.id, document: "preview", version: after.previewVersion } as const;
          this.emit(change.tenantId, after.id, `${id}p`, event, null);
        }
        return;
      }
      case "grants":
        for (const site of this.sitesOf(change.tenantId)) {
          this.emit(change.tenantId, site, id, { type: "grants", userId: change.subject }, [change.subject]);
        }
        return;
      case "gift":
        // A redemption or a revocation: the readers of the link are not known here, so the whole site.
        for (const site of this.sitesOf(change.tenantId)) {
          this.emit(change.tenantId, site, id, { type: "gift", giftId: change.subject }, null);
        }
        return;
      case "streaming": {
        const [site, users] = change.subject.split("\n") as [string, string | undefined];
        const userIds = users === undefined || users === "" ? [] : users.split(",");
        this.emit(change.tenantId, site, id, { type: "streaming", userIds }, userIds);
        return;
      }
      case "key":
        for (const set of [...this.listeners.values()]) {
          for (const l of [...set]) if (l.keyId === change.subject) l.close();
        }
        return;
    }
  }

  /** Sites of a tenant with a stream open or within the resume window. */
  private sitesOf(tenantId: string): string[] {
    const out: string[] = [];
    for (const key of this.listenedAt.keys()) {
      const [tenant, site] = key.split(SEP) as [string, string];
      if (tenant === tenantId) out.push(site);
    }
    return out;
  }

  private emit(
    tenantId: string,
    siteId: string,
    id: string,
    event: InterventionEvent,
    subjects: readonly string[] | null,
  ): void {
    const site = tenantId + SEP + siteId;
    const listenedAt = this.listenedAt.get(site);
    const now = this.options.now();
    if (listenedAt === undefined) return;
    const set = this.listeners.get(site);
    if (set === undefined && now - listenedAt > this.options.resumeMs) {
      // Nobody has listened for a whole window: forget the site.
      this.listenedAt.delete(site);
      this.buffers.delete(site);
      return;
    }
    let buffer = this.buffers.get(site);
    if (buffer === undefined) {
      buffer = [];
      this.buffers.set(site, buffer);
    }
    buffer.push({ id, event, subjects, at: now });
    while (buffer.length > this.options.resumeEvents || (buffer[0] as Buffered).at < now - this.options.resumeMs) {
      buffer.shift();
    }
    if (set === undefined) return;
    const frame = sseFrame(id, event);
    for (const l of set) {
      if (!concerns(l, subjects)) continue;
      // A stream for some subjects learns only of its own subjects' streaming writes.
      if (event.type === "streaming" && l.subjects !== null) {
        const own = l.subjects;
        l.send(sseFrame(id, { type: "streaming", userIds: event.userIds.filter((u) => own.has(u)) }));
      } else l.send(frame);
    }
  }

  private rememberPeriods(tenantId: string, siteId: string): void {
    const meters = this.registry.site(tenantId, siteId)?.live?.meters;
    if (meters === undefined) return;
    const now = this.options.now();
    for (const meter of meters.values()) {
      this.periods.set(tenantId + SEP + siteId + SEP + meter.name, meter.periodKey(now));
    }
  }

  /** Heartbeats (and this process' slots renewed), then the meter periods that rolled over since the last tick. */
  tick(): void {
    const now = this.options.now();
    if (this.options.slots) {
      const held = new Map(this.byKey);
      for (const [key, n] of this.opening) held.set(key, (held.get(key) ?? 0) + n);
      this.options.slots.renew(held).catch(() => {});
    }
    const heartbeat = `: heartbeat ${now}\n\n`;
    for (const [site, set] of [...this.listeners]) {
      for (const l of [...set]) {
        if (l.keyExpiresAt !== null && l.keyExpiresAt <= now) l.close();
        else l.send(heartbeat);
      }
      const [tenantId, siteId] = site.split(SEP) as [string, string];
      const meters = this.registry.site(tenantId, siteId)?.live?.meters;
      if (meters === undefined) continue;
      for (const meter of meters.values()) {
        const key = site + SEP + meter.name;
        const period = meter.periodKey(now);
        const was = this.periods.get(key);
        this.periods.set(key, period);
        if (was === undefined || was === period) continue;
        const event = { type: "meter_period", meter: meter.name, period } as const;
        this.emit(tenantId, siteId, `m${now}-${meter.name}`, event, null);
      }
    }
  }
}

function concerns(listener: Listener, subjects: readonly string[] | null): boolean {
  if (listener.subjects === null || subjects === null) return true;
  for (const s of subjects) if (listener.subjects.has(s)) return true;
  return false;
}

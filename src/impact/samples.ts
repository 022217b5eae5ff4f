import { createHmac, randomBytes } from "node:crypto";
import type { BatchResult, FactSnapshot, MeterKind, MeterRead } from "../core/types";
import type { DecisionEngine, DecisionSampler } from "../decide/engine";
import type { DecideRequest } from "../decide/request";
import { errorText } from "../infra/error-text";
import type { Logger } from "../logger";

/**
 * One decide request as impact replay keeps it: the facts its snapshot held, the subject hashed,
 * its meter reads as plain values, the features it named. Nothing else of the request (no user
 * id, no body, no key) is kept.
 */
export interface ImpactSample {
  readonly features: readonly string[];
  readonly now: number;
  readonly content: FactSnapshot["content"];
  readonly articleId: string | null;
  readonly grants: FactSnapshot["grants"];
  readonly user: FactSnapshot["user"];
  readonly org: FactSnapshot["org"];
  readonly context: FactSnapshot["context"];
  readonly streaming: FactSnapshot["streaming"];
  readonly external: FactSnapshot["external"];
  readonly gift: FactSnapshot["gift"];
  readonly newsletters: FactSnapshot["newsletters"];
  /** The subject (user id, else device id) as a keyed hash, or null when the request had none. */
  readonly subject: string | null;
  /** The reads of every meter of the document that could be read for the subject. */
  readonly meters: Readonly<Record<string, MeterRead>>;
}

export interface ImpactSamplesOptions {
  /** Requests kept per site (the newest). Default 200. */
  readonly capacity?: number;
  /** About one request in `every` is sampled (0: none). Default 32. */
  readonly every?: number;
  /** Most requests sampled per second in this process. Default 20. */
  readonly perSecond?: number;
  readonly logger?: Logger;
  /** The key subjects are hashed with (default: a new random one): the decide thread uses its process'. */
  readonly hashKey?: Uint8Array;
  /** Where a captured sample goes instead of this object's rings (the decide thread hands it over). */
  readonly onKept?: (tenantId: string, siteId: string, sample: ImpactSample) => void;
}

const SEP = "\u0001";

/** A namespace copied whole: a sample shares nothing with caches or the request's body. */
function copy<T>(value: T): T {
  return value === null || value === undefined ? value : structuredClone(value);
}

/**
 * The meter values the answer gave (`decisions.<feature>.meters`: read before the request's own
 * ticks), by meter; empty when the answer cannot be read.
 */
function answeredMeters(answer: string): Map<string, { allowance: number; count: number }> {
  const out = new Map<string, { allowance: number; count: number }>();
  try {
    const decisions = (JSON.parse(answer) as { decisions?: Record<string, { meters?: unknown }> }).decisions;
    for (const name in decisions) {
      const meters = decisions[name]?.meters as Record<string, { allowance: number; count: number }> | undefined;
      if (meters === undefined || meters === null) continue;
      for (const meter in meters) {
        const m = meters[meter];
        if (m !== undefined && typeof m.count === "number" && !out.has(meter)) out.set(meter, m);
      }
    }
  } catch {
    // A sample then falls back on the evaluation's own ticks (beforeOwnTick).
  }
  return out;
}

/**
 * A meter as the request read it, before its own tick. The request was answered and its ticks
 * applied before it is evaluated again here, so the read here may include them. The answer says
 * what every meter a rule read held before (`answered`); a seen meter whose count did not move
 * had already counted this article. A meter charged without being read is put back by this
 * evaluation's own ticks.
 */
function beforeOwnTick(
  read: MeterRead,
  kind: MeterKind,
  answered: { count: number } | undefined,
  ticked: boolean,
): MeterRead {
  if (answered !== undefined) {
    const count = Math.min(answered.count, read.count);
    return { allowance: read.allowance, count, seen: read.seen && count === read.count };
  }
  if (!ticked || read.count === 0) return { allowance: read.allowance, count: read.count, seen: read.seen };
  if (kind === "seen") {
    return read.seen
      ? { allowance: read.allowance, count: read.count - 1, seen: false }
      : { allowance: read.allowance, count: read.count, seen: false };
  }
  return { allowance: read.allowance, count: read.count - 1, seen: read.seen };
}

/** A fixed-size ring of the newest samples of one site. */
class Ring {
  private readonly items: ImpactSample[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  push(sample: ImpactSample): void {
    if (this.items.length < this.capacity) this.items.push(sample);
    else this.items[this.next] = sample;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  inOrder(): ImpactSample[] {
    return this.items.length < this.capacity
      ? [...this.items]
      : [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}

/**
 * The recent decide requests impact replay runs against a staged document (src/impact/replay.ts),
 * kept in this process's memory only, per site, a bounded ring each. Decide offers every request
 * it answered; a countdown picks about one in `every` (at most `perSecond` a second), and the
 * picked request is captured later, off the request's path, by evaluating it again with no
 * effect at all, as explain does.
 */
export class ImpactSamples implements DecisionSampler {
  private countdown: number;
  private second = -1;
  private inSecond = 0;
  private readonly rings = new Map<string, Ring>();
  private readonly capacity: number;
  private readonly every: number;
  private readonly perSecond: number;
  /** Subjects are hashed with a key of this process: a hash cannot be looked up in a table of ids. */
  readonly hashKey: Uint8Array;
  private readonly logger: Logger | undefined;
  private readonly onKept: ImpactSamplesOptions["onKept"];

  constructor(options: ImpactSamplesOptions = {}) {
    this.capacity = Math.max(1, options.capacity ?? 200);
    this.every = options.every ?? 32;
    this.perSecond = options.perSecond ?? 20;
    this.logger = options.logger;
    this.hashKey = options.hashKey ?? randomBytes(32);
    this.onKept = options.onKept;
    this.countdown = this.nextCountdown();
  }

  /**
   * Offers a request decide answered, with its answer (after answering it). All the hot path
   * pays is the decrement and the compare; never throws.
   */
  offer(engine: DecisionEngine, req: DecideRequest, answer: string): void {
    if (--this.countdown > 0) return;
    this.pick(engine, req, answer);
  }

  /** The samples held for a site, oldest first (a copy). */
  samplesOf(tenantId: string, siteId: string): readonly ImpactSample[] {
    return this.rings.get(tenantId + SEP + siteId)?.inOrder() ?? [];
  }

  /** The keyed hash a subject is kept as (16 hex characters). */
  hashSubject(subject: string): string {
    return createHmac("sha256", this.hashKey).update(subject).digest("hex").slice(0, 16);
  }

  /**
   * Spreads the picks around `every` (1 to 2·every−1 requests apart), so a caller whose requests
   * repeat in a cycle is not always sampled at the same point of it. Infinity: sampling is off.
   */
  private nextCountdown(): number {
    if (this.every <= 0) return Number.POSITIVE_INFINITY;
    if (this.every === 1) return 1;
    return 1 + Math.floor(Math.random() * (2 * this.every - 1));
  }

  private pick(engine: DecisionEngine, req: DecideRequest, answer: string): void {
    try {
      this.countdown = this.nextCountdown();
      // Operators' own calls (a preview token, explain) are not the readers' traffic.
      if (req.preview || req.input.explain === true) return;
      const second = Math.floor(req.now / 1000);
      if (second !== this.second) {
        this.second = second;
        this.inSecond = 0;
      }
      if (this.inSecond >= this.perSecond) return;
      this.inSecond++;
      setImmediate(() => this.capture(engine, req, answer));
    } catch {
      // Sampling never fails a request.
    }
  }

  /**
   * Evaluates the request again with no effect (no meter tick, no gift redemption, no exposure)
   * and keeps what its snapshot held.
   */
  private capture(engine: DecisionEngine, req: DecideRequest, answer: string): void {
    const observe = (snapshot: FactSnapshot, result: BatchResult) => {
      this.keep(req, snapshot, result, answer);
    };
    const failed = (error: unknown) => {
      this.logger?.debug("impact sample not captured", { error: errorText(error) });
    };
    try {
      const evaluated = engine.evaluate(req, observe);
      if (evaluated instanceof Promise) evaluated.catch(failed);
    } catch (error) {
      failed(error);
    }
  }

  private keep(req: DecideRequest, snapshot: FactSnapshot, result: BatchResult, answer: string): void {
    const before = answeredMeters(answer);
    const meters: Record<string, MeterRead> = {};
    for (const [name, meter] of req.document.meters) {
      const read = snapshot.meter(name);
      if (read === undefined) continue;
      meters[name] = beforeOwnTick(read, meter.kind, before.get(name), result.ticks.includes(name));
    }
    const gift = snapshot.gift as Readonly<Record<string, unknown>>;
    const sample: ImpactSample = Object.freeze({
      features: Object.freeze([...req.input.features]),
      now: snapshot.now,
      content: copy(snapshot.content),
      articleId: snapshot.articleId,
      grants: copy(snapshot.grants),
      user: copy(snapshot.user),
      org: copy(snapshot.org),
      context: copy(snapshot.context),
      streaming: copy(snapshot.streaming),
      external: copy(snapshot.external),
      // The gifter is a user id: kept as the same keyed hash as subjects.
      gift: typeof gift.gifter === "string" ? { ...gift, gifter: this.hashSubject(gift.gifter) } : copy(gift),
      newsletters: copy(snapshot.newsletters),
      subject: snapshot.subject === null ? null : this.hashSubject(snapshot.subject),
      meters: Object.freeze(meters),
    });
    if (this.onKept !== undefined) this.onKept(req.site.tenantId, req.site.id, sample);
    else this.hold(req.site.tenantId, req.site.id, sample);
  }

  /** Keeps a captured sample in its site's ring (one this object captured, or the decide thread's). */
  hold(tenantId: string, siteId: string, sample: ImpactSample): void {
    const key = tenantId + SEP + siteId;
    let ring = this.rings.get(key);
    if (ring === undefined) {
      ring = new Ring(this.capacity);
      this.rings.set(key, ring);
    }
    ring.push(sample);
  }
}

import type { CompiledSite } from "../core/compile";
import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, CompiledMeter, FactSnapshot, FeatureDecision, MeterRead } from "../core/types";
import { countOf, holds, type MeterCounters, type MeterTable } from "../counters/meter-counters";
import type { RateWindows } from "../counters/rate-windows";
import type { Deps } from "../deps";
import { AppError } from "../http/errors";
import type { SiteState } from "../sites/registry";
import type { UserFactsCache } from "../users/facts-cache";
import { answerJson } from "./answer-json";
import type { DecideInput } from "./model";

export interface DecideDeps {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  /** The Iglu schema URI of exposure events (from SVC_IGLU_VENDOR), built once. */
  readonly exposureSchema: string;
  /** The same URI as a JSON string, for answers written straight to JSON. */
  readonly exposureSchemaJson: string;
}

/** What decide needs of the process' dependencies (every decide route builds it once). */
export function decideDepsOf(deps: Pick<Deps, "meters" | "userFacts" | "config">): DecideDeps {
  const exposureSchema = `iglu:${deps.config.igluVendor}/experiment_exposure/jsonschema/1-0-0`;
  return {
    meters: deps.meters,
    userFacts: deps.userFacts,
    exposureSchema,
    exposureSchemaJson: JSON.stringify(exposureSchema),
  };
}

export interface ExposureEvent {
  schema: string;
  data: { experiment: string; variant: string; preview: boolean };
}

/** The response contract of DESIGN.md, member names exactly as written there. */
export interface DecideResponse {
  decisions: Record<string, FeatureDecision>;
  unanswered: string[];
  preview: boolean;
  accessMissing?: true;
  exposures: ExposureEvent[];
}

export interface DecideRequest {
  readonly site: SiteState;
  /** The compiled document to evaluate: live, or the staged one under a valid preview token. */
  readonly document: CompiledSite;
  readonly preview: boolean;
  readonly input: DecideInput;
  readonly userId: string | null;
  /** Grants from the signed access cookie (browser routes); otherwise read for `userId`. */
  readonly grants?: FactSnapshot["grants"];
  /** The request carried a session cookie but no usable access cookie. */
  readonly accessMissing?: boolean;
  readonly now: number;
}

const EMPTY_OBJECT: Readonly<Record<string, never>> = Object.freeze({});

/** A 429 with Retry-After when the window is spent; a domain result turned into an error here. */
export function takeRate(windows: RateWindows, key: string, nowMs: number): void {
  const retryAfter = windows.take(key, nowMs);
  if (retryAfter > 0) {
    throw new AppError("rate_limited", "Too many requests.", undefined, 429, { "retry-after": String(retryAfter) });
  }
}

/**
 * A document's meter with its counter table for one period (looked up once per period). Never
 * changed in place: a new period gets a new slot, so a request that holds a slot across an await
 * keeps reading and ticking the table it loaded, even if the period rolls over meanwhile.
 */
interface MeterSlot {
  readonly meter: CompiledMeter;
  readonly seenKind: boolean;
  readonly period: string;
  readonly table: MeterTable;
}
const slotCache = new WeakMap<CompiledSite, Map<string, MeterSlot>>();

/** The meter slots of a document (looked up once per request). */
function slotsOf(document: CompiledSite): Map<string, MeterSlot> {
  let slots = slotCache.get(document);
  if (slots === undefined) {
    slots = new Map();
    slotCache.set(document, slots);
  }
  return slots;
}

function meterSlot(
  meters: MeterCounters,
  site: SiteState,
  document: CompiledSite,
  slots: Map<string, MeterSlot>,
  name: string,
  now: number,
): MeterSlot | undefined {
  const known = slots.get(name);
  const meter = known?.meter ?? document.meters.get(name);
  if (meter === undefined) return undefined;
  const period = meter.periodKey(now);
  if (known !== undefined && known.period === period) return known;
  const seenKind = meter.kind === "seen";
  const slot = { meter, seenKind, period, table: meters.table(site.tenantId, site.id, name, period, seenKind) };
  slots.set(name, slot);
  return slot;
}

/** Position of a meter among a request's held slots (a handful at most), or -1. */
function indexOfMeter(held: readonly MeterSlot[] | null, name: string): number {
  if (held === null) return -1;
  for (let i = 0; i < held.length; i++) if ((held[i] as MeterSlot).meter.name === name) return i;
  return -1;
}

/** A batch evaluated against its snapshot, with its effects not yet applied. */
export interface Evaluated {
  readonly result: BatchResult;
  /**
   * Applies the batch's deduplicated meter ticks (once, after every feature resolved).
   * `sameRun`: called in the same synchronous run as the evaluation, with no await between, so
   * the subject slots found while evaluating are still this subject's; otherwise each tick
   * finds its subject again (another request may have evicted it and reused the slot).
   */
  applyEffects(sameRun: boolean): void;
}

/**
 * Builds one frozen fact snapshot and evaluates every named feature; effects wait for
 * `applyEffects`. It awaits the store only for a user or meter counts not yet held in memory,
 * and is synchronous (no promise at all) when everything is held, as on the hot path.
 */
export function evaluateRequest(deps: DecideDeps, req: DecideRequest): Evaluated | Promise<Evaluated> {
  if (req.userId === null) return withFacts(deps, req, null, EMPTY_OBJECT as FactSnapshot["grants"]);
  const found = deps.userFacts.get(req.site.tenantId, req.userId, req.now);
  if (found instanceof Promise) {
    return found.then((facts) => withFacts(deps, req, facts.traits, req.grants ?? facts.grants));
  }
  return withFacts(deps, req, found.traits, req.grants ?? found.grants);
}

function withFacts(
  deps: DecideDeps,
  req: DecideRequest,
  traits: Readonly<Record<string, unknown>> | null,
  grants: FactSnapshot["grants"],
): Evaluated | Promise<Evaluated> {
  const { document, input } = req;
  const subject = req.userId ?? input.deviceId ?? null;
  // Meters the named features may read or tick, held in memory before evaluating.
  let held: MeterSlot[] | null = null;
  // The subject's slot in each held table, found once: reused when nothing is read first.
  let found: number[] | null = null;
  let misses: Promise<void>[] | null = null;
  if (subject !== null) {
    const features = document.features;
    let slots: Map<string, MeterSlot> | null = null;
    for (const name of input.features) {
      const feature = features.get(name);
      if (feature === undefined || feature.meters.length === 0) continue;
      slots ??= slotsOf(document);
      for (const meterName of feature.meters) {
        if (indexOfMeter(held, meterName) !== -1) continue;
        const slot = meterSlot(deps.meters, req.site, document, slots, meterName, req.now);
        if (slot === undefined) continue;
        const at = slot.table.find(subject);
        if (at < 0) {
          // Not held: all of this request's misses are read together (one batched round trip).
          if (misses === null) misses = [slot.table.load(subject)];
          else misses.push(slot.table.load(subject));
        }
        if (held === null) {
          held = [slot];
          found = [at];
        } else {
          held.push(slot);
          (found as number[]).push(at);
        }
      }
    }
  }
  // After the reads, other requests may have moved subjects: the slots are found again.
  if (misses !== null) return Promise.all(misses).then(() => evaluateHeld(req, traits, grants, subject, held, null));
  return evaluateHeld(req, traits, grants, subject, held, found);
}

function evaluateHeld(
  req: DecideRequest,
  traits: Readonly<Record<string, unknown>> | null,
  grants: FactSnapshot["grants"],
  subject: string | null,
  held: MeterSlot[] | null,
  foundBefore: number[] | null,
): Evaluated {
  const { document, input } = req;
  const verified = document.verifyContent(input.content, req.now);
  const articleId = verified?.articleId ?? null;
  // Reads are snapshotted after the last await: values before this request's own ticks. Each
  // subject's slot is found once (`foundBefore`, from this same run, or here after an await),
  // and ticked by slot when no await came in between.
  let reads: MeterRead[] | null = null;
  let found: number[] | null = null;
  if (held !== null && subject !== null) {
    reads = new Array<MeterRead>(held.length);
    found = foundBefore ?? new Array<number>(held.length);
    for (let i = 0; i < held.length; i++) {
      const h = held[i] as MeterSlot;
      const at = foundBefore === null ? h.table.find(subject) : (foundBefore[i] as number);
      found[i] = at;
      // Not held (evicted while this request awaited another read): read as empty.
      const value = at < 0 ? 0 : h.table.valueAt(at);
      reads[i] = {
        allowance: h.meter.allowance,
        count: countOf(value),
        seen: h.seenKind && articleId !== null && holds(value, articleId),
      };
    }
  }

  const snapshot: FactSnapshot = Object.freeze({
    now: req.now,
    content: verified?.facts ?? null,
    articleId,
    grants,
    user: traits,
    context: input.context ?? EMPTY_OBJECT,
    streaming: EMPTY_OBJECT,
    external: EMPTY_OBJECT,
    gift: EMPTY_OBJECT,
    subject,
    meter: (name: string): MeterRead | undefined => {
      const i = indexOfMeter(held, name);
      return i === -1 || reads === null ? undefined : reads[i];
    },
  });

  const result = evaluateBatch(document, input.features, snapshot);
  return {
    result,
    applyEffects(sameRun) {
      if (held === null || subject === null || found === null) return;
      const ticks = result.ticks;
      for (let t = 0; t < ticks.length; t++) {
        const i = indexOfMeter(held, ticks[t] as string);
        const h = held[i];
        if (h === undefined) continue;
        // After an await, another request may have evicted the subject and reused its slot.
        const at = sameRun ? (found[i] as number) : -1;
        if (h.seenKind) {
          if (articleId === null) continue;
          if (at < 0) h.table.tickSeen(subject, articleId);
          else h.table.tickSeenAt(at, articleId);
        } else if (at < 0) h.table.tickCount(subject);
        else h.table.tickCountAt(at);
      }
    },
  };
}

/**
 * Decides a batch: evaluates every named feature against one snapshot, applies the batch's
 * deduplicated effects once all features have resolved, then renders the answer.
 */
function decideWith<T>(
  deps: DecideDeps,
  req: DecideRequest,
  render: (deps: DecideDeps, req: DecideRequest, result: BatchResult) => T,
): T | Promise<T> {
  const evaluated = evaluateRequest(deps, req);
  if (evaluated instanceof Promise) {
    return evaluated.then((e) => {
      // This callback runs in a later microtask than the evaluation: slots are found again.
      e.applyEffects(false);
      return render(deps, req, e.result);
    });
  }
  evaluated.applyEffects(true);
  return render(deps, req, evaluated.result);
}

/** Decides a batch; the answer as an object (the browser route's framework serialises it). */
export function decide(deps: DecideDeps, req: DecideRequest): DecideResponse | Promise<DecideResponse> {
  return decideWith(deps, req, respond);
}

/** Decides a batch; the answer as JSON text, the same bytes as `decide`'s object serialised. */
export function decideJson(deps: DecideDeps, req: DecideRequest): string | Promise<string> {
  return decideWith(deps, req, writeAnswer);
}

function writeAnswer(deps: DecideDeps, req: DecideRequest, result: BatchResult): string {
  return answerJson(result, req.preview, req.accessMissing === true, deps.exposureSchemaJson);
}

function respond(deps: DecideDeps, req: DecideRequest, result: BatchResult): DecideResponse {
  const exposures: ExposureEvent[] = [];
  if (result.exposures.length > 0) {
    const schema = deps.exposureSchema;
    for (const e of result.exposures) {
      exposures.push({ schema, data: { experiment: e.experiment, variant: e.variant, preview: req.preview } });
    }
  }

  const response: DecideResponse = {
    decisions: hasJourneys(req.document) ? withoutJourneyUrls(result.decisions) : result.decisions,
    unanswered: result.unanswered,
    preview: req.preview,
    exposures,
  };
  if (req.accessMissing) response.accessMissing = true;
  return response;
}

const journeyCache = new WeakMap<CompiledSite, boolean>();

/** Whether a compiled document has journey features at all (known once per deploy). */
function hasJourneys(document: CompiledSite): boolean {
  let known = journeyCache.get(document);
  if (known === undefined) {
    known = [...document.features.values()].some((f) => f.purpose === "journey");
    journeyCache.set(document, known);
  }
  return known;
}

/** Decide answers carry outcome, type, fields and meters; destinations belong to forward. */
function withoutJourneyUrls(decisions: Record<string, FeatureDecision>): Record<string, FeatureDecision> {
  for (const name in decisions) {
    const d = decisions[name];
    if (d && (d.url !== undefined || d.fallbackUrl !== undefined)) {
      const { url: _u, fallbackUrl: _f, ...rest } = d;
      decisions[name] = rest;
    }
  }
  return decisions;
}

import type { CompiledSite } from "../core/compile";
import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, CompiledMeter, FactSnapshot, FeatureDecision, MeterRead } from "../core/types";
import { countOf, holds, type MeterCounters, type MeterTable } from "../counters/meter-counters";
import type { RateWindows } from "../counters/rate-windows";
import { AppError } from "../http/errors";
import type { SiteState } from "../sites/registry";
import type { UserFactsCache } from "../users/facts-cache";
import type { DecideInput } from "./model";

export interface DecideDeps {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  readonly igluVendor: string;
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

interface HeldMeter {
  table: MeterTable;
  seenKind: boolean;
  allowance: number;
  read: MeterRead | null;
}

interface TableSlot {
  period: string;
  table: MeterTable;
}
const tableCache = new WeakMap<CompiledSite, Map<string, TableSlot>>();

/** The counter table of a document's meter for the current period (looked up once per period). */
function meterTable(
  meters: MeterCounters,
  site: SiteState,
  document: CompiledSite,
  meter: CompiledMeter,
  now: number,
): MeterTable {
  let slots = tableCache.get(document);
  if (!slots) {
    slots = new Map();
    tableCache.set(document, slots);
  }
  const period = meter.periodKey(now);
  const slot = slots.get(meter.name);
  if (slot !== undefined && slot.period === period) return slot.table;
  const table = meters.table(site.tenantId, site.id, meter.name, period, meter.kind === "seen");
  slots.set(meter.name, { period, table });
  return table;
}

/** A batch evaluated against its snapshot, with its effects not yet applied. */
export interface Evaluated {
  readonly result: BatchResult;
  /** Applies the batch's deduplicated meter ticks (once, after every feature resolved). */
  applyEffects(): void;
}

/**
 * Builds one frozen fact snapshot (awaiting the store only for users and meters not yet held
 * in memory) and evaluates every named feature. Effects wait for `applyEffects`.
 */
export async function evaluateRequest(deps: DecideDeps, req: DecideRequest): Promise<Evaluated> {
  const { site, document, input, now } = req;
  const subject = req.userId ?? input.deviceId ?? null;

  let traits: Readonly<Record<string, unknown>> | null = null;
  let grants = EMPTY_OBJECT as FactSnapshot["grants"];
  if (req.userId !== null) {
    const found = deps.userFacts.get(site.tenantId, req.userId, now);
    const facts = found instanceof Promise ? await found : found;
    traits = facts.traits;
    grants = req.grants ?? facts.grants;
  }

  const verified = document.verifyContent(input.content, now);
  const articleId = verified?.articleId ?? null;

  // Meters the named features may read or tick, held in memory before evaluating.
  let held: Map<string, HeldMeter> | null = null;
  let misses: Promise<void>[] | null = null;
  if (subject !== null) {
    for (const name of input.features) {
      const feature = document.features.get(name);
      if (!feature || feature.meters.length === 0) continue;
      for (const meterName of feature.meters) {
        if (held?.has(meterName)) continue;
        const meter = document.meters.get(meterName);
        if (!meter) continue;
        const table = meterTable(deps.meters, site, document, meter, now);
        if (table.peek(subject) === undefined) {
          // Not held: all of this request's misses are read together (one batched round trip).
          if (misses === null) misses = [table.load(subject)];
          else misses.push(table.load(subject));
        }
        if (held === null) held = new Map();
        held.set(meterName, { table, seenKind: meter.kind === "seen", allowance: meter.allowance, read: null });
      }
    }
    if (misses !== null) await Promise.all(misses);
  }
  // Reads are snapshotted after the last await: values before this request's own ticks.
  if (held !== null && subject !== null) {
    for (const h of held.values()) {
      const value = h.table.peek(subject) ?? 0;
      h.read = {
        allowance: h.allowance,
        count: countOf(value),
        seen: h.seenKind && articleId !== null && holds(value, articleId),
      };
    }
  }
  const meterReads = held;

  const snapshot: FactSnapshot = Object.freeze({
    now,
    content: verified?.facts ?? null,
    articleId,
    grants,
    user: traits,
    context: input.context ?? EMPTY_OBJECT,
    streaming: EMPTY_OBJECT,
    external: EMPTY_OBJECT,
    gift: EMPTY_OBJECT,
    subject,
    meter: (name: string) => meterReads?.get(name)?.read ?? undefined,
  });

  const result = evaluateBatch(document, input.features, snapshot);
  const meters = held;
  return {
    result,
    applyEffects() {
      if (meters === null || subject === null) return;
      for (const name of result.ticks) {
        const h = meters.get(name);
        if (!h) continue;
        if (h.seenKind) {
          if (articleId !== null) h.table.tickSeen(subject, articleId);
        } else {
          h.table.tickCount(subject);
        }
      }
    },
  };
}

/**
 * Decides a batch: evaluates every named feature against one snapshot, then applies the
 * batch's deduplicated effects once all features have resolved.
 */
export async function decide(deps: DecideDeps, req: DecideRequest): Promise<DecideResponse> {
  const { result, applyEffects } = await evaluateRequest(deps, req);
  applyEffects();

  const exposures: ExposureEvent[] = [];
  if (result.exposures.length > 0) {
    const schema = `iglu:${deps.igluVendor}/experiment_exposure/jsonschema/1-0-0`;
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

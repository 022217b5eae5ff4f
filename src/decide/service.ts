import type { CompiledSite } from "../core/compile";
import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, FactSnapshot, FeatureDecision, MeterRead } from "../core/types";
import { type MeterCounters, type MeterState, meterKey } from "../counters/meter-counters";
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
  key: string;
  state: MeterState;
  seenKind: boolean;
  allowance: number;
  read: MeterRead | null;
}

const KEY_SEP = "\u0001";
/** Placeholder until a missing meter is read; never ticked or reported. */
const EMPTY_STATE: MeterState = Object.freeze({ count: 0, seen: null }) as MeterState;
const prefixCache = new WeakMap<CompiledSite, Map<string, string>>();

/** Counter-key prefixes (tenant, site, meter) of a compiled document, built once per deploy. */
function meterPrefixes(site: SiteState, document: CompiledSite): Map<string, string> {
  let prefixes = prefixCache.get(document);
  if (!prefixes) {
    prefixes = new Map();
    for (const name of document.meters.keys())
      prefixes.set(name, meterKey(site.tenantId, site.id, name, "", "").slice(0, -1));
    prefixCache.set(document, prefixes);
  }
  return prefixes;
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
    const prefixes = meterPrefixes(site, document);
    for (const name of input.features) {
      const feature = document.features.get(name);
      if (!feature || feature.meters.length === 0) continue;
      for (const meterName of feature.meters) {
        if (held?.has(meterName)) continue;
        const meter = document.meters.get(meterName);
        const prefix = prefixes.get(meterName);
        if (!meter || prefix === undefined) continue;
        const key = prefix + subject + KEY_SEP + meter.periodKey(now);
        const seenKind = meter.kind === "seen";
        const entry: HeldMeter = {
          key,
          state: deps.meters.peek(key) ?? EMPTY_STATE,
          seenKind,
          allowance: meter.allowance,
          read: null,
        };
        if (entry.state === EMPTY_STATE) {
          // Not held: all of this request's misses are read together (one batched round trip).
          const loading = deps.meters.read(key, seenKind).then((state) => {
            entry.state = state;
          });
          if (misses === null) misses = [loading];
          else misses.push(loading);
        }
        if (held === null) held = new Map();
        held.set(meterName, entry);
      }
    }
    if (misses !== null) await Promise.all(misses);
  }
  // Reads are snapshotted after the last await: values before this request's own ticks.
  if (held !== null) {
    for (const h of held.values()) {
      h.read = {
        allowance: h.allowance,
        count: h.state.count,
        seen: h.seenKind && articleId !== null && (h.state.seen?.includes(articleId) ?? false),
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
      if (meters === null) return;
      for (const name of result.ticks) {
        const h = meters.get(name);
        if (!h) continue;
        if (h.seenKind) {
          if (articleId !== null) deps.meters.tickSeen(h.key, h.state, articleId);
        } else {
          deps.meters.tickCount(h.key, h.state);
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

import type { Config } from "../config";
import type { CompiledSite } from "../core/compile";
import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, CompiledMeter, FactSnapshot, MeterRead } from "../core/types";
import type { MeterCounters, MeterTable, SeenAdmission } from "../counters/meter-counters";
import type { GiftLedger } from "../gifts/ledger";
import { StoreUnavailable, withinDeadline } from "../infra/deadline";
import { factsOf, type NewsletterFacts, type NewsletterFactsCache, unknownFacts } from "../newsletters/facts-cache";
import type { SiteState } from "../sites/registry";
import type { StreamingFactsCache } from "../streaming/facts-cache";
import type { UserFactsCache } from "../users/facts-cache";
import { answerJson } from "./answer-json";
import type { DecideRequest, Effects, Observer } from "./request";

export interface DecideDeps {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  readonly streamingFacts: StreamingFactsCache;
  /** The Iglu schema URI of exposure events (from SVC_IGLU_VENDOR) as a JSON string, built once. */
  readonly exposureSchemaJson: string;
  /** How long a request waits for each round of store reads before it answers 503. */
  readonly readDeadlineMs: number;
  /** Gift links: read only for a request that carries `giftLink`. */
  readonly gifts: GiftLedger;
  /** Newsletter standings: read only for a request naming a feature that reads `newsletters.*`. */
  readonly newsletterFacts?: NewsletterFactsCache;
}

/** Where decide's facts come from: the process' stores and caches (a narrow view of the app's deps). */
export interface DecideSources {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  readonly streamingFacts: StreamingFactsCache;
  readonly gifts: GiftLedger;
  readonly config: Pick<Config, "igluVendor" | "readDeadlineMs">;
  readonly newsletters?: { readonly facts: NewsletterFactsCache };
}

/** What decide needs of the process' dependencies (every decide route builds it once). */
export function decideDepsOf(deps: DecideSources): DecideDeps {
  return {
    newsletterFacts: deps.newsletters?.facts,
    meters: deps.meters,
    gifts: deps.gifts,
    userFacts: deps.userFacts,
    streamingFacts: deps.streamingFacts,
    exposureSchemaJson: JSON.stringify(`iglu:${deps.config.igluVendor}/experiment_exposure/jsonschema/1-0-0`),
    readDeadlineMs: deps.config.readDeadlineMs,
  };
}

/** The `gift` namespace of a request (EMPTY_OBJECT: no gift), passed along rather than kept on the request so its shape stays one. */
type Gift = FactSnapshot["gift"];

const EMPTY_OBJECT: Readonly<Record<string, never>> = Object.freeze({});
type Streaming = FactSnapshot["streaming"];

/** Whether a named feature reads `streaming.*` (no work at all for a document where none does). */
function readsStreaming(document: CompiledSite, names: readonly string[]): boolean {
  const readers = document.streamingFeatures;
  if (readers === null) return false;
  for (let i = 0; i < names.length; i++) if (readers.has(names[i] as string)) return true;
  return false;
}

/** Whether a named feature reads `newsletters.*` (one property read for a document where none does). */
function readsNewsletters(document: CompiledSite, names: readonly string[]): boolean {
  const readers = document.newsletterFeatures;
  if (readers === null) return false;
  for (let i = 0; i < names.length; i++) if (readers.has(names[i] as string)) return true;
  return false;
}

/**
 * The `newsletters.*` facts of requests whose features read them, kept beside the request (not
 * on it, so the request's shape stays one on the hot path) until its snapshot is built.
 */
const standingsOfRequest = new WeakMap<DecideRequest, NewsletterFacts>();

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
  // A table is detached only once its period has been unused for a minute (meter-counters.ts).
  if (known !== undefined && known.period === period && !known.table.detached) return known;
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

/**
 * Rounds of reads a request makes for its meters: the first, then again for values another
 * request evicted while this one awaited (only when the tables are at their cap). A meter still
 * not held after the last round is not read: a feature that tests it takes its `onError` outcome.
 */
const READ_ROUNDS = 3;

/**
 * Builds one frozen fact snapshot and evaluates every named feature; with `effects`, applies the
 * batch's deduplicated meter ticks once every feature has resolved, in the same synchronous run
 * as the evaluation (so the subject slots it found are still the subject's). It awaits the store
 * only for a user, meter values or (when a named feature reads `streaming.*`) the user's
 * streaming values not yet held in memory, and is synchronous (no promise at all)
 * when everything is held, as on the hot path. Each wait has the read deadline: past it the
 * request rejects with 503 and neither evaluates nor ticks, whenever the reads end.
 */
export function evaluateRequest(
  deps: DecideDeps,
  req: DecideRequest,
  effects: Effects,
): BatchResult | Promise<BatchResult> {
  // A document whose features read no newsletter fact pays one property read, nothing more.
  if (req.document.newsletterFeatures !== null && readsNewsletters(req.document, req.input.features)) {
    return withNewsletters(deps, req, effects);
  }
  return evaluateWithoutStandings(deps, req, effects);
}

function evaluateWithoutStandings(
  deps: DecideDeps,
  req: DecideRequest,
  effects: Effects,
): BatchResult | Promise<BatchResult> {
  // A request without a gift link pays one property read for gift links, nothing more.
  if (req.input.giftLink !== undefined) return withGift(deps, req, effects);
  return evaluatePlain(deps, req, effects, EMPTY_OBJECT);
}

/** Reads the user's newsletter standings (anonymous: every list `unknown`), then evaluates. */
function withNewsletters(deps: DecideDeps, req: DecideRequest, effects: Effects): BatchResult | Promise<BatchResult> {
  if (req.userId === null || deps.newsletterFacts === undefined) {
    standingsOfRequest.set(req, unknownFacts(req.document));
    return evaluateWithoutStandings(deps, req, effects);
  }
  const held = deps.newsletterFacts.get(req.site.tenantId, req.userId);
  if (held instanceof Promise) {
    return withinDeadline(held, deps.readDeadlineMs).then((standings) => {
      standingsOfRequest.set(req, factsOf(req.document, standings, req.now));
      return evaluateWithoutStandings(deps, req, effects);
    });
  }
  standingsOfRequest.set(req, factsOf(req.document, held, req.now));
  return evaluateWithoutStandings(deps, req, effects);
}

/**
 * Reads the request's gift link (gift-links.md) before the usual evaluation: its facts join the
 * snapshot, and an unusable link reads as no gift (never an error, the answer is still 200).
 */
function withGift(deps: DecideDeps, req: DecideRequest, effects: Effects): BatchResult | Promise<BatchResult> {
  const checked = deps.gifts.check({
    site: req.site,
    document: req.document,
    token: req.input.giftLink as string,
    content: req.input.content,
    subject: req.userId ?? req.input.deviceId ?? null,
    now: req.now,
    effects: effects === true,
  });
  if (checked instanceof Promise) {
    return checked.then((gift) => evaluatePlain(deps, req, effects, gift ?? EMPTY_OBJECT));
  }
  return evaluatePlain(deps, req, effects, checked ?? EMPTY_OBJECT);
}

function evaluatePlain(
  deps: DecideDeps,
  req: DecideRequest,
  effects: Effects,
  gift: Gift,
): BatchResult | Promise<BatchResult> {
  if (req.userId === null) {
    return withFacts(deps, req, null, EMPTY_OBJECT as FactSnapshot["grants"], EMPTY_OBJECT, effects, gift);
  }
  const found = deps.userFacts.get(req.site.tenantId, req.userId, req.now);
  const streaming: Streaming | Promise<Streaming> = readsStreaming(req.document, req.input.features)
    ? deps.streamingFacts.get(req.site.tenantId, req.site.id, req.userId)
    : EMPTY_OBJECT;
  if (streaming instanceof Promise) {
    return withinDeadline(Promise.all([found, streaming]), deps.readDeadlineMs).then(([facts, values]) =>
      withFacts(deps, req, facts.traits, req.grants ?? facts.grants, values, effects, gift),
    );
  }
  if (found instanceof Promise) {
    return withinDeadline(found, deps.readDeadlineMs).then((facts) =>
      withFacts(deps, req, facts.traits, req.grants ?? facts.grants, streaming, effects, gift),
    );
  }
  return withFacts(deps, req, found.traits, req.grants ?? found.grants, streaming, effects, gift);
}

function withFacts(
  deps: DecideDeps,
  req: DecideRequest,
  traits: Readonly<Record<string, unknown>> | null,
  grants: FactSnapshot["grants"],
  streaming: Streaming,
  effects: Effects,
  gift: Gift,
): BatchResult | Promise<BatchResult> {
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
    // Indexed loops, not for-of: the compiled iterator over a feature's meters deoptimised at
    // the end of the array (OutOfBounds) and the function was recompiled every few seconds.
    const names = input.features;
    for (let n = 0; n < names.length; n++) {
      const feature = features.get(names[n] as string);
      if (feature === undefined) continue;
      const meterNames = feature.meters;
      if (meterNames.length === 0) continue;
      slots ??= slotsOf(document);
      for (let m = 0; m < meterNames.length; m++) {
        const meterName = meterNames[m] as string;
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
  if (misses !== null) {
    const read = held as MeterSlot[];
    const who = subject as string;
    const ms = deps.readDeadlineMs;
    const admissionRounds = deps.meters.exactSeen ? ADMISSION_ROUNDS : NO_ADMISSIONS;
    return withinDeadline(Promise.all(misses), ms).then(() =>
      afterReads(req, traits, grants, streaming, who, read, effects, READ_ROUNDS - 1, ms, gift, admissionRounds),
    );
  }
  return evaluateHeld(
    req,
    traits,
    grants,
    streaming,
    subject,
    held,
    found,
    effects,
    gift,
    deps.readDeadlineMs,
    deps.meters.exactSeen ? ADMISSION_ROUNDS : NO_ADMISSIONS,
  );
}

/**
 * After a round of reads, other requests may have moved subjects: every slot is found again, and
 * values evicted meanwhile are read again while rounds are left.
 */
function afterReads(
  req: DecideRequest,
  traits: Readonly<Record<string, unknown>> | null,
  grants: FactSnapshot["grants"],
  streaming: Streaming,
  subject: string,
  held: MeterSlot[],
  effects: Effects,
  rounds: number,
  deadlineMs: number,
  gift: Gift,
  admissionRounds: number,
): BatchResult | Promise<BatchResult> {
  const found = new Array<number>(held.length);
  let misses: Promise<void>[] | null = null;
  for (let i = 0; i < held.length; i++) {
    const table = (held[i] as MeterSlot).table;
    const at = table.find(subject);
    found[i] = at;
    if (at >= 0 || rounds === 0) continue;
    if (misses === null) misses = [table.load(subject)];
    else misses.push(table.load(subject));
  }
  if (misses !== null) {
    return withinDeadline(Promise.all(misses), deadlineMs).then(() =>
      afterReads(req, traits, grants, streaming, subject, held, effects, rounds - 1, deadlineMs, gift, admissionRounds),
    );
  }
  return evaluateHeld(req, traits, grants, streaming, subject, held, found, effects, gift, deadlineMs, admissionRounds);
}

/** Evaluates with the subject's slots found in this same synchronous run (-1: not held). */
function evaluateHeld(
  req: DecideRequest,
  traits: Readonly<Record<string, unknown>> | null,
  grants: FactSnapshot["grants"],
  streaming: Streaming,
  subject: string | null,
  held: MeterSlot[] | null,
  found: number[] | null,
  effects: Effects,
  gift: Gift,
  deadlineMs: number,
  /** Admission rounds left (ADMISSION_ROUNDS at first), or NO_ADMISSIONS on the embedded store. */
  admissionRounds: number,
): BatchResult | Promise<BatchResult> {
  const { document, input } = req;
  const verified = document.verifyContent(input.content, req.now);
  const articleId = verified?.articleId ?? null;
  // Reads are snapshotted here: values before this request's own ticks.
  let reads: (MeterRead | undefined)[] | null = null;
  if (held !== null && found !== null) {
    reads = new Array<MeterRead | undefined>(held.length);
    for (let i = 0; i < held.length; i++) {
      const h = held[i] as MeterSlot;
      const at = found[i] as number;
      // Still not held after the last round of reads: unknown, not zero.
      if (at < 0) continue;
      reads[i] = {
        allowance: h.meter.allowance,
        count: h.table.countAt(at),
        seen: articleId !== null && h.table.holdsAt(at, articleId),
      };
    }
  }

  const snapshot: FactSnapshot = Object.freeze({
    now: req.now,
    content: verified?.facts ?? null,
    articleId,
    grants,
    user: traits,
    org: req.org ?? null,
    context: input.context ?? EMPTY_OBJECT,
    streaming,
    external: EMPTY_OBJECT,
    gift,
    newsletters: document.newsletterFeatures === null ? undefined : standingsOfRequest.get(req),
    subject,
    meter: (name: string): MeterRead | undefined => {
      const i = indexOfMeter(held, name);
      return i === -1 || reads === null ? undefined : reads[i];
    },
  });

  const result = evaluateBatch(document, input.features, snapshot);
  if (
    admissionRounds !== NO_ADMISSIONS &&
    (effects === true || (effects !== false && effects.ticking === true)) &&
    held !== null &&
    found !== null &&
    subject !== null &&
    articleId !== null
  ) {
    const admissions = admissionsOf(result.ticks, held, found, articleId);
    if (admissions !== null) {
      const retry = { req, traits, grants, streaming, subject, held, gift, effects, deadlineMs, admissionRounds };
      return admitThenTick(retry, snapshot, result, admissions, articleId);
    }
  }
  if (effects === true) {
    if (held !== null && found !== null && subject !== null) applyTicks(result.ticks, held, found, subject, articleId);
  } else if (effects !== false) {
    effects(snapshot, result, () => {
      if (held !== null && found !== null && subject !== null)
        applyTicks(result.ticks, held, found, subject, articleId);
    });
  }
  return result;
}

/**
 * How many times a request evaluates again after the store refused a seen meter's new member
 * (another process filled the reader's allowance meanwhile) before it answers 503.
 */
export const ADMISSION_ROUNDS = 2;
/**
 * In place of the rounds left: the store never admits (`MeterCounters.exactSeen` is false: the
 * embedded store, one process), so a ticking request skips the admission check entirely.
 */
const NO_ADMISSIONS = -1;
// The admission is a write: past the deadline it may still commit, and the retry finds the
// article admitted (`member`) and counts it once.

/**
 * The held meters (their positions in `held`) whose tick adds a new member to a seen meter that
 * other processes also count (`MeterCounters.exactSeen`: a Postgres server), or null: such a
 * member is admitted by the store before the answer (one transaction), so a reader never gets
 * more distinct articles through the meter than its allowance, however many processes serve them.
 */
function admissionsOf(
  ticks: readonly string[],
  held: readonly MeterSlot[],
  found: readonly number[],
  articleId: string,
): number[] | null {
  let out: number[] | null = null;
  for (let t = 0; t < ticks.length; t++) {
    const i = indexOfMeter(held, ticks[t] as string);
    const h = held[i];
    if (h === undefined || !h.seenKind || !h.table.exactSeen) continue;
    const at = found[i] as number;
    if (at < 0 || h.table.holdsAt(at, articleId)) continue;
    if (out === null) out = [i];
    else out.push(i);
  }
  return out;
}

/** What evaluating a request again needs. */
interface Retry {
  readonly req: DecideRequest;
  readonly traits: Readonly<Record<string, unknown>> | null;
  readonly grants: FactSnapshot["grants"];
  readonly streaming: Streaming;
  readonly subject: string;
  readonly held: MeterSlot[];
  readonly gift: Gift;
  /** `true`, or an observer (OFREP) told of the result once its ticks are applied. */
  readonly effects: true | Observer;
  readonly deadlineMs: number;
  readonly admissionRounds: number;
}

/**
 * Admits the new members through the store, then applies the batch's ticks (slots found again:
 * the request awaited). A member another process had already admitted is simply held now. When
 * the store refuses one (the allowance is reached), the reader's members are read again and the
 * batch evaluated again (no tick applied from this evaluation), at most ADMISSION_ROUNDS times.
 */
async function admitThenTick(
  r: Retry,
  snapshot: FactSnapshot,
  result: BatchResult,
  admissions: readonly number[],
  articleId: string,
): Promise<BatchResult> {
  const ms = r.deadlineMs;
  const outcomes = await withinDeadline(
    Promise.all(
      admissions.map((i) => {
        const h = r.held[i] as MeterSlot;
        return h.table.admit(r.subject, articleId, h.meter.allowance);
      }),
    ),
    ms,
  );
  if (outcomes.every((o) => o.outcome !== "full")) {
    const found = r.held.map((h) => h.table.find(r.subject));
    for (let k = 0; k < admissions.length; k++) {
      const i = admissions[k] as number;
      const table = (r.held[i] as MeterSlot).table;
      const at = found[i] as number;
      found[i] = -2;
      // Stored now: held as written (an evicted value reads it back on its next request).
      if (at < 0) continue;
      const stale = (outcomes[k] as SeenAdmission).before !== table.countAt(at);
      table.admittedAt(at, articleId);
      // Another process added members meanwhile: read them, so later answers count them.
      if (stale) table.refresh(r.subject).catch(() => {});
    }
    applyTicks(result.ticks, r.held, found, r.subject, articleId);
    if (r.effects !== true) r.effects(snapshot, result, () => {});
    return result;
  }
  if (r.admissionRounds === 0) {
    throw new StoreUnavailable("admission", "The reader's meters changed while deciding; retry shortly.");
  }
  await withinDeadline(Promise.all(admissions.map((i) => (r.held[i] as MeterSlot).table.refresh(r.subject))), ms);
  const { req, traits, grants, streaming, subject, held, gift } = r;
  return afterReads(
    req,
    traits,
    grants,
    streaming,
    subject,
    held,
    r.effects,
    READ_ROUNDS - 1,
    ms,
    gift,
    r.admissionRounds - 1,
  );
}

/** The batch's deduplicated meter ticks, by the slots found in the same synchronous run. */
function applyTicks(
  ticks: readonly string[],
  held: readonly MeterSlot[],
  found: readonly number[],
  subject: string,
  articleId: string | null,
): void {
  for (let t = 0; t < ticks.length; t++) {
    const i = indexOfMeter(held, ticks[t] as string);
    const h = held[i];
    if (h === undefined) continue;
    const at = found[i] as number;
    if (at === -2) continue; // admitted by the store (admitThenTick)
    if (h.seenKind) {
      if (articleId === null) continue;
      // Not held after every round of reads: ticked once read, so it lands on the stored value.
      if (at < 0) h.table.tickWhenRead(subject, articleId);
      else h.table.tickSeenAt(at, articleId);
    } else if (at < 0) h.table.tickWhenRead(subject, null);
    else h.table.tickCountAt(at);
  }
}

/**
 * Decides a batch: evaluates every named feature against one snapshot, applies the batch's
 * deduplicated effects once all features have resolved, and writes the answer as JSON (the
 * response contract of DESIGN.md, `answer-json.ts`). Both decide routes answer with it.
 */
export function decideJson(deps: DecideDeps, req: DecideRequest): string | Promise<string> {
  const result = evaluateRequest(deps, req, true);
  if (result instanceof Promise) return result.then((r) => writeAnswer(deps, req, r));
  return writeAnswer(deps, req, result);
}

function writeAnswer(deps: DecideDeps, req: DecideRequest, result: BatchResult): string {
  return answerJson(result, req.preview, req.accessMissing === true, deps.exposureSchemaJson);
}

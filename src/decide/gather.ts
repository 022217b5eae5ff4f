import type { CompiledSite } from "../core/compile";
import type { FactSnapshot } from "../core/types";
import { withinDeadline } from "../infra/deadline";
import { factsOf, type NewsletterFacts, unknownFacts } from "../newsletters/facts-cache";
import { indexOfMeter, type MeterSlot, meterSlot, slotsOf } from "./meter-slots";
import type { DecideRequest, Effects } from "./request";
import type { DecideDeps } from "./sources";

type Gift = FactSnapshot["gift"];
type Streaming = FactSnapshot["streaming"];

export const EMPTY_OBJECT: Readonly<Record<string, never>> = Object.freeze({});

/**
 * Rounds of reads a request makes for its meters: the first, then again for values another
 * request evicted while this one awaited (only when the tables are at their cap). A meter still
 * not held after the last round is not read: a feature that tests it takes its `onError` outcome.
 */
export const READ_ROUNDS = 3;

/**
 * In place of the admission rounds left: the store never admits (`MeterCounters.exact` is
 * false: the embedded store, one process), so a ticking request skips the admission check.
 */
export const NO_ADMISSIONS = -1;

/**
 * How many times a request evaluates again after the store refused a meter's admission (another
 * process filled the reader's allowance meanwhile) before it answers 503.
 */
export const ADMISSION_ROUNDS = 2;

/**
 * One request's context through the phases: the facts gathered for it (newsletter standings,
 * gift, user traits and grants, streaming values, the meters its features read), then what the
 * evaluation and its effects need. One object of one shape per request, filled in order.
 */
export interface Gathered {
  readonly deps: DecideDeps;
  readonly req: DecideRequest;
  readonly effects: Effects;
  /** `newsletters.*` facts, when a named feature reads them. */
  newsletters: NewsletterFacts | undefined;
  gift: Gift;
  traits: Readonly<Record<string, unknown>> | null;
  grants: FactSnapshot["grants"];
  streaming: Streaming;
  /** The user id, else the device id: whom meters and splits count. */
  readonly subject: string | null;
  /** Meters the named features may read or tick, held in memory before evaluating. */
  held: MeterSlot[] | null;
  /**
   * The subject's slot in each held table (-1: not held), found in the synchronous run that
   * evaluates; null: to be found again (the request awaited since).
   */
  found: number[] | null;
  /** Rounds of meter reads left for values evicted while the request awaited. */
  readRounds: number;
  /** Admission rounds left (ADMISSION_ROUNDS at first), or NO_ADMISSIONS on the embedded store. */
  admissionRounds: number;
}

/**
 * The first phase: gathers every fact the named features read. Synchronous (no promise at all)
 * when everything is held in memory, as on the hot path; each store wait has the read deadline
 * (past it the request rejects with 503 and neither evaluates nor ticks).
 */
export function gatherFacts(deps: DecideDeps, req: DecideRequest, effects: Effects): Gathered | Promise<Gathered> {
  const g: Gathered = {
    deps,
    req,
    effects,
    newsletters: undefined,
    gift: EMPTY_OBJECT,
    traits: null,
    grants: EMPTY_OBJECT as FactSnapshot["grants"],
    streaming: EMPTY_OBJECT,
    subject: req.userId ?? req.input.deviceId ?? null,
    held: null,
    found: null,
    readRounds: READ_ROUNDS - 1,
    admissionRounds: deps.meters.exact ? ADMISSION_ROUNDS : NO_ADMISSIONS,
  };
  // A document whose features read no newsletter fact pays one property read, nothing more.
  if (req.document.newsletterFeatures !== null && readsNewsletters(req.document, req.input.features)) {
    const reading = readNewsletters(g);
    if (reading !== undefined) return reading.then(() => afterNewsletters(g));
  }
  return afterNewsletters(g);
}

function afterNewsletters(g: Gathered): Gathered | Promise<Gathered> {
  // A request without a gift link pays one property read for gift links, nothing more.
  if (g.req.input.giftLink !== undefined) {
    const reading = readGift(g);
    if (reading !== undefined) return reading.then(() => afterGift(g));
  }
  return afterGift(g);
}

function afterGift(g: Gathered): Gathered | Promise<Gathered> {
  if (g.req.userId !== null) {
    const reading = readUser(g, g.req.userId);
    if (reading !== undefined) return reading.then(() => holdMeters(g));
  }
  return holdMeters(g);
}

/** Reads the user's newsletter standings (anonymous: every list `unknown`). */
function readNewsletters(g: Gathered): Promise<void> | undefined {
  const { req, deps } = g;
  if (req.userId === null || deps.newsletterFacts === undefined) {
    g.newsletters = unknownFacts(req.document);
    return undefined;
  }
  const held = deps.newsletterFacts.get(req.site.tenantId, req.userId);
  if (held instanceof Promise) {
    return withinDeadline(held, deps.readDeadlineMs).then((standings) => {
      g.newsletters = factsOf(req.document, standings, req.now);
    });
  }
  g.newsletters = factsOf(req.document, held, req.now);
  return undefined;
}

/**
 * Reads the request's gift link (gift-links.md): its facts join the snapshot, and an unusable
 * link reads as no gift (never an error, the answer is still 200).
 */
function readGift(g: Gathered): Promise<void> | undefined {
  const { req } = g;
  const checked = g.deps.gifts.check({
    site: req.site,
    document: req.document,
    token: req.input.giftLink as string,
    content: req.input.content,
    subject: req.userId ?? req.input.deviceId ?? null,
    now: req.now,
    effects: g.effects === true,
  });
  if (checked instanceof Promise) {
    return checked.then((gift) => {
      g.gift = gift ?? EMPTY_OBJECT;
    });
  }
  g.gift = checked ?? EMPTY_OBJECT;
  return undefined;
}

/** The user's traits and grants, and (when a named feature reads `streaming.*`) streaming values. */
function readUser(g: Gathered, userId: string): Promise<void> | undefined {
  const { req, deps } = g;
  const found = deps.userFacts.get(req.site.tenantId, userId, req.now);
  const streaming: Streaming | Promise<Streaming> = readsStreaming(req.document, req.input.features)
    ? deps.streamingFacts.get(req.site.tenantId, req.site.id, userId)
    : EMPTY_OBJECT;
  if (streaming instanceof Promise) {
    return withinDeadline(Promise.all([found, streaming]), deps.readDeadlineMs).then(([facts, values]) => {
      g.traits = facts.traits;
      g.grants = req.grants ?? facts.grants;
      g.streaming = values;
    });
  }
  g.streaming = streaming;
  if (found instanceof Promise) {
    return withinDeadline(found, deps.readDeadlineMs).then((facts) => {
      g.traits = facts.traits;
      g.grants = req.grants ?? facts.grants;
    });
  }
  g.traits = found.traits;
  g.grants = req.grants ?? found.grants;
  return undefined;
}

/**
 * Holds in memory every meter the named features may read or tick for the subject, with all of
 * the request's misses read together (one batched round trip), and finds the subject's slots.
 */
function holdMeters(g: Gathered): Gathered | Promise<Gathered> {
  const subject = g.subject;
  if (subject === null) return g;
  const { req } = g;
  const document = req.document;
  const features = document.features;
  let slots: Map<string, MeterSlot> | null = null;
  let held: MeterSlot[] | null = null;
  let found: number[] | null = null;
  let misses: Promise<void>[] | null = null;
  // Indexed loops, not for-of: the compiled iterator over a feature's meters deoptimised at
  // the end of the array (OutOfBounds) and the function was recompiled every few seconds.
  const names = req.input.features;
  for (let n = 0; n < names.length; n++) {
    const feature = features.get(names[n] as string);
    if (feature === undefined) continue;
    const meterNames = feature.meters;
    if (meterNames.length === 0) continue;
    slots ??= slotsOf(document);
    for (let m = 0; m < meterNames.length; m++) {
      const meterName = meterNames[m] as string;
      if (indexOfMeter(held, meterName) !== -1) continue;
      const slot = meterSlot(g.deps.meters, req.site, document, slots, meterName, req.now);
      if (slot === undefined) continue;
      const at = slot.table.find(subject);
      if (at < 0) {
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
  g.held = held;
  if (misses !== null) return afterMisses(g, misses);
  g.found = found;
  return g;
}

/**
 * The subject's rows read for the meters not held (found again once read, in the run that
 * evaluates: findHeld). Its own function, so the hot path's compiled code holds no part of the
 * wait: taken only now and then, that part made the compiled holdMeters exit and be compiled
 * again, minutes into a load (docs/performance.md, "Compiles in the measured windows").
 */
function afterMisses(g: Gathered, misses: Promise<void>[]): Promise<Gathered> {
  return withinDeadline(Promise.all(misses), g.deps.readDeadlineMs).then(() => g);
}

/**
 * Finds the subject's slot in each held table again, in the synchronous run that evaluates
 * (other requests may have moved subjects while this one awaited), and reads again the values
 * evicted meanwhile while rounds are left: undefined when found, a promise while reading again.
 */
export function findHeld(g: Gathered): Promise<void> | undefined {
  const held = g.held as MeterSlot[];
  const subject = g.subject as string;
  const found = new Array<number>(held.length);
  let misses: Promise<void>[] | null = null;
  for (let i = 0; i < held.length; i++) {
    const table = (held[i] as MeterSlot).table;
    const at = table.find(subject);
    found[i] = at;
    if (at >= 0 || g.readRounds === 0) continue;
    if (misses === null) misses = [table.load(subject)];
    else misses.push(table.load(subject));
  }
  if (misses !== null) {
    g.readRounds--;
    return withinDeadline(Promise.all(misses), g.deps.readDeadlineMs).then(() => undefined);
  }
  g.found = found;
  return undefined;
}

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

import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, FactSnapshot, MeterRead } from "../core/types";
import { MAX_ARTICLE_ID_LENGTH, type VerifiedContent } from "../core/verifier";
import { StoreUnavailable } from "../infra/deadline";
import { AppError } from "../infra/errors";
import { answerJson } from "./answer-json";
import { admissionsOf, admitMembers, applyTicks, refreshMembers } from "./effects";
import { EMPTY_OBJECT, findHeld, type Gathered, gatherFacts, NO_ADMISSIONS, READ_ROUNDS } from "./gather";
import { indexOfMeter, type MeterSlot } from "./meter-slots";
import type { DecideRequest, Effects, Observer } from "./request";
import type { DecideDeps } from "./sources";

export { ADMISSION_ROUNDS } from "./gather";

/** A signed descriptor whose `id` no meter can store: refused before anything is evaluated or ticked. */
const articleIdTooLong = () =>
  new AppError("validation_failed", "The request failed validation.", [
    { path: "/content/payload", message: `its id must be at most ${MAX_ARTICLE_ID_LENGTH} characters` },
  ]);

/**
 * Decide in three phases: gather the facts the named features read (`gather.ts`: synchronous
 * when everything is held, a promise otherwise), evaluate them in the pure core against one
 * frozen snapshot, then apply the effects (`effects.ts`: the batch's deduplicated meter ticks,
 * after the store admits a seen meter's new member where several processes count). `effects`
 * chooses the mode: `true` decides, an observer explains (never ticks) or observes and ticks
 * (OFREP). The ticks land in the same synchronous run as the evaluation, so the subject slots it
 * found are still the subject's. Each store wait has the read deadline: past it the request
 * rejects with 503 and neither evaluates nor ticks, whenever the reads end.
 */
export function evaluateRequest(
  deps: DecideDeps,
  req: DecideRequest,
  effects: Effects,
): BatchResult | Promise<BatchResult> {
  const gathered = gatherFacts(deps, req, effects);
  if (gathered instanceof Promise) return gathered.then(evaluateAfterWait);
  return evaluateGathered(gathered);
}

/** The request awaited: its meter slots are found again in the run that evaluates. */
function evaluateAfterWait(g: Gathered): BatchResult | Promise<BatchResult> {
  g.found = null;
  return evaluateGathered(g);
}

/** The second phase (and the third from it): snapshot, evaluation, effects. */
function evaluateGathered(g: Gathered): BatchResult | Promise<BatchResult> {
  if (g.held !== null && g.found === null) {
    const reading = findHeld(g);
    if (reading !== undefined) return reading.then(() => evaluateGathered(g));
  }
  const { req } = g;
  const verified = req.document.verifyContent(req.input.content, req.now);
  if (verified?.idTooLong) throw articleIdTooLong();
  const articleId = verified?.articleId ?? null;
  const snapshot = snapshotOf(g, verified, articleId);
  const result = evaluateBatch(req.document, req.input.features, snapshot);
  return applyEffects(g, snapshot, result, articleId);
}

/** One frozen snapshot of the gathered facts; meter reads are values before this request's ticks. */
function snapshotOf(g: Gathered, verified: VerifiedContent | null, articleId: string | null): FactSnapshot {
  const { req, held, found } = g;
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
  return Object.freeze({
    now: req.now,
    content: verified?.facts ?? null,
    articleId,
    grants: g.grants,
    user: g.traits,
    org: req.org ?? null,
    context: req.input.context ?? EMPTY_OBJECT,
    streaming: g.streaming,
    external: EMPTY_OBJECT,
    gift: g.gift,
    newsletters: g.newsletters,
    subject: g.subject,
    meter: (name: string): MeterRead | undefined => {
      const i = indexOfMeter(held, name);
      return i === -1 || reads === null ? undefined : reads[i];
    },
  });
}

/** The third phase: what the mode does with the result (decide ticks, explain never does). */
function applyEffects(
  g: Gathered,
  snapshot: FactSnapshot,
  result: BatchResult,
  articleId: string | null,
): BatchResult | Promise<BatchResult> {
  const { effects, held, found, subject } = g;
  if (held === null || found === null || subject === null) {
    if (effects !== true && effects !== false) effects(snapshot, result, () => {});
    return result;
  }
  if (
    g.admissionRounds !== NO_ADMISSIONS &&
    result.ticks.length > 0 &&
    (effects === true || (effects !== false && effects.ticking === true))
  ) {
    const admissions = admissionsOf(result.ticks, held, found, articleId);
    if (admissions !== null) return admitThenTick(g, snapshot, result, admissions, articleId);
  }
  if (effects === true) applyTicks(result.ticks, held, found, subject, articleId);
  else if (effects !== false)
    effects(snapshot, result, () => applyTicks(result.ticks, held, found, subject, articleId));
  return result;
}

/**
 * A seen meter's new member, or a count meter's call below the allowance, is admitted by the
 * store first (server store only); when the store refuses it (another
 * process filled the reader's allowance meanwhile), the members are read again and the batch
 * evaluated again (no tick applied from this evaluation), at most ADMISSION_ROUNDS times.
 */
async function admitThenTick(
  g: Gathered,
  snapshot: FactSnapshot,
  result: BatchResult,
  admissions: readonly number[],
  articleId: string | null,
): Promise<BatchResult> {
  if (await admitMembers(g, result.ticks, admissions, articleId)) {
    if (g.effects !== true) (g.effects as Observer)(snapshot, result, () => {});
    return result;
  }
  if (g.admissionRounds === 0) {
    throw new StoreUnavailable("admission", "The reader's meters changed while deciding; retry shortly.");
  }
  await refreshMembers(g, admissions);
  g.admissionRounds--;
  g.readRounds = READ_ROUNDS - 1;
  g.found = null;
  return evaluateGathered(g);
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
  // Live decisions are counted (a typed-array increment per answered feature); previews are not.
  if (deps.decisionCounts !== null && !req.preview) deps.decisionCounts.count(req.site, req.document, result, req.now);
  return answerJson(result, req.preview, req.accessMissing === true, deps.exposureSchemaJson);
}

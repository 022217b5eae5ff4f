import type { SeenAdmission } from "../counters/meter-counters";
import { storeUnavailableOf, withinDeadline } from "../infra/deadline";
import type { Gathered } from "./gather";
import { indexOfMeter, type MeterSlot } from "./meter-slots";

/**
 * The held meters (their positions in `held`) whose tick other processes also count
 * (`MeterCounters.exact`: a Postgres server) and must be admitted by the store before the
 * answer, or null: a seen meter's new member (one transaction), a count meter's call while the
 * count held is below the allowance (one statement). So a reader never gets more distinct
 * articles, or more calls, through a meter than its allowance, however many processes serve
 * them. A count meter's tick at or past the allowance is written behind, as on one process.
 */
export function admissionsOf(
  ticks: readonly string[],
  held: readonly MeterSlot[],
  found: readonly number[],
  articleId: string | null,
): number[] | null {
  let out: number[] | null = null;
  for (let t = 0; t < ticks.length; t++) {
    const i = indexOfMeter(held, ticks[t] as string);
    const h = held[i];
    if (h === undefined || !h.table.exact) continue;
    const at = found[i] as number;
    if (at < 0) continue;
    if (h.seenKind) {
      // A seen meter without an article id ticks nothing (`applyTicks`).
      if (articleId === null || h.table.holdsAt(at, articleId)) continue;
    } else if (h.table.countAt(at) >= h.meter.allowance) continue;
    if (out === null) out = [i];
    else out.push(i);
  }
  return out;
}

/**
 * Admits the new members through the store, then applies the batch's ticks (slots found again:
 * the request awaited): true. A member another process had already admitted is simply held now.
 * When the store refuses one (the allowance is reached), nothing is ticked: false (the caller
 * reads the reader's members again, `refreshMembers`, and evaluates again). The admission is a write: past the
 * deadline it may still commit, and a retry finds the article admitted and counts it once.
 * When the store cannot be reached or answers past the deadline, the ticks are applied as on one
 * process (written behind): an outage degrades the meters to per-process counting, it never
 * holds or refuses a reader held in memory (a late admission that commits too only counts a
 * count meter's call twice, against the reader).
 */
export async function admitMembers(
  g: Gathered,
  ticks: readonly string[],
  admissions: readonly number[],
  articleId: string | null,
): Promise<boolean> {
  const held = g.held as MeterSlot[];
  const subject = g.subject as string;
  const ms = g.deps.readDeadlineMs;
  let outcomes: SeenAdmission[];
  try {
    outcomes = await withinDeadline(
      Promise.all(
        admissions.map((i) => {
          const h = held[i] as MeterSlot;
          return h.table.admit(subject, articleId ?? "", h.meter.allowance);
        }),
      ),
      ms,
    );
  } catch (error) {
    if (storeUnavailableOf(error) === null) throw error;
    // Unreachable or late: counted by this process alone (the fallback of an outage).
    applyTicks(
      ticks,
      held,
      held.map((h) => h.table.find(subject)),
      subject,
      articleId,
    );
    return true;
  }
  const found = held.map((h) => h.table.find(subject));
  if (outcomes.some((o) => o.outcome === "full")) {
    // A count meter refused is at its allowance: held so, the next evaluation reads it spent.
    for (let k = 0; k < admissions.length; k++) {
      const i = admissions[k] as number;
      const at = found[i] as number;
      const h = held[i] as MeterSlot;
      if (at >= 0 && (outcomes[k] as SeenAdmission).outcome === "full") h.table.fullAt(at, h.meter.allowance);
    }
    return false;
  }
  for (let k = 0; k < admissions.length; k++) {
    const i = admissions[k] as number;
    const table = (held[i] as MeterSlot).table;
    const at = found[i] as number;
    found[i] = ADMITTED;
    // Stored now: held as written (an evicted value reads it back on its next request).
    if (at < 0) continue;
    const before = (outcomes[k] as SeenAdmission).before;
    const stale = table.seenKind && before !== table.countAt(at);
    table.admittedAt(at, articleId ?? "", before);
    // Another process added members meanwhile: read them, so later answers count them.
    if (stale) table.refresh(subject).catch(() => {});
  }
  applyTicks(ticks, held, found, subject, articleId);
  return true;
}

/**
 * Reads again the reader's members of the seen meters whose admission the store refused (a count
 * meter refused is already held at its allowance, `fullAt`).
 */
export function refreshMembers(g: Gathered, admissions: readonly number[]): Promise<unknown> {
  const held = g.held as MeterSlot[];
  const subject = g.subject as string;
  const reads: Promise<void>[] = [];
  for (const i of admissions) {
    const h = held[i] as MeterSlot;
    if (h.seenKind) reads.push(h.table.refresh(subject));
  }
  return reads.length === 0 ? Promise.resolve() : withinDeadline(Promise.all(reads), g.deps.readDeadlineMs);
}

/** In `found`: a member the store admitted (its tick is the admission itself). */
const ADMITTED = -2;

/** The batch's deduplicated meter ticks, by the slots found in the same synchronous run. */
export function applyTicks(
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
    if (at === ADMITTED) continue;
    if (h.seenKind) {
      if (articleId === null) continue;
      // Not held after every round of reads: ticked once read, so it lands on the stored value.
      if (at < 0) h.table.tickWhenRead(subject, articleId);
      else h.table.tickSeenAt(at, articleId);
    } else if (at < 0) h.table.tickWhenRead(subject, null);
    else h.table.tickCountAt(at);
  }
}

import type { SeenAdmission } from "../counters/meter-counters";
import { withinDeadline } from "../infra/deadline";
import type { Gathered } from "./gather";
import { indexOfMeter, type MeterSlot } from "./meter-slots";

/**
 * The held meters (their positions in `held`) whose tick adds a new member to a seen meter that
 * other processes also count (`MeterCounters.exactSeen`: a Postgres server), or null: such a
 * member is admitted by the store before the answer (one transaction), so a reader never gets
 * more distinct articles through the meter than its allowance, however many processes serve them.
 */
export function admissionsOf(
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

/**
 * Admits the new members through the store, then applies the batch's ticks (slots found again:
 * the request awaited): true. A member another process had already admitted is simply held now.
 * When the store refuses one (the allowance is reached), nothing is ticked: false (the caller
 * reads the reader's members again, `refreshMembers`, and evaluates again). The admission is a write: past the
 * deadline it may still commit, and a retry finds the article admitted and counts it once.
 */
export async function admitMembers(
  g: Gathered,
  ticks: readonly string[],
  admissions: readonly number[],
  articleId: string,
): Promise<boolean> {
  const held = g.held as MeterSlot[];
  const subject = g.subject as string;
  const ms = g.deps.readDeadlineMs;
  const outcomes = await withinDeadline(
    Promise.all(
      admissions.map((i) => {
        const h = held[i] as MeterSlot;
        return h.table.admit(subject, articleId, h.meter.allowance);
      }),
    ),
    ms,
  );
  if (outcomes.some((o) => o.outcome === "full")) return false;
  const found = held.map((h) => h.table.find(subject));
  for (let k = 0; k < admissions.length; k++) {
    const i = admissions[k] as number;
    const table = (held[i] as MeterSlot).table;
    const at = found[i] as number;
    found[i] = ADMITTED;
    // Stored now: held as written (an evicted value reads it back on its next request).
    if (at < 0) continue;
    const stale = (outcomes[k] as SeenAdmission).before !== table.countAt(at);
    table.admittedAt(at, articleId);
    // Another process added members meanwhile: read them, so later answers count them.
    if (stale) table.refresh(subject).catch(() => {});
  }
  applyTicks(ticks, held, found, subject, articleId);
  return true;
}

/** Reads again the reader's members of the meters whose admission the store refused. */
export function refreshMembers(g: Gathered, admissions: readonly number[]): Promise<unknown> {
  const held = g.held as MeterSlot[];
  const subject = g.subject as string;
  return withinDeadline(
    Promise.all(admissions.map((i) => (held[i] as MeterSlot).table.refresh(subject))),
    g.deps.readDeadlineMs,
  );
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

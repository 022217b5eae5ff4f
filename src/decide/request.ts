import type { CompiledSite } from "../core/compile";
import type { BatchResult, FactSnapshot } from "../core/types";
import type { SiteState } from "../sites/registry";
import type { DecideInput } from "./model";

/** One decision request, whichever route or mode asks for it. */
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
  /** `org.*` facts from the access cookie (browser routes); absent: unavailable (keyed route). */
  readonly org?: FactSnapshot["org"];
  readonly now: number;
}

/**
 * What a request does with its evaluation: `true` applies its effects (decide), `false` applies
 * none, and a function is handed the frozen snapshot and the result (explain, OFREP) with a
 * callback that applies the batch's meter ticks, valid only during that call (same synchronous run).
 * An observer that will tick says so (`ticking`, OFREP): a seen meter's new member is then
 * admitted by the store first (`admitThenTick`), as for decide, and the observer is called once
 * the ticks are applied (its callback then does nothing). Explain never ticks and never writes.
 */
export type Effects = boolean | Observer;
export type Observer = ((snapshot: FactSnapshot, result: BatchResult, applyTicks: () => void) => void) & {
  readonly ticking?: true;
};

/** An observer that applies the batch's ticks (OFREP). */
export function tickingObserver(
  observe: (snapshot: FactSnapshot, result: BatchResult, applyTicks: () => void) => void,
): Observer {
  return Object.assign(observe, { ticking: true as const });
}

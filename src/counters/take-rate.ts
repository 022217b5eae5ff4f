import { AppError } from "../infra/errors";
import type { KeyedRate } from "./quota-leases";
import type { RateWindows } from "./rate-windows";

/** Keyed decide's window (a quota lease on a server store): a promise only while it claims. */
export function takeKeyedRate(rate: KeyedRate, key: string, nowMs: number): void | Promise<void> {
  const retryAfter = rate.take(key, nowMs);
  if (typeof retryAfter === "number") return refuseAfter(retryAfter);
  return retryAfter.then(refuseAfter);
}

/** A per-process window: a 429 with Retry-After once it is spent. */
export function takeRate(windows: RateWindows, key: string, nowMs: number): void {
  refuseAfter(windows.take(key, nowMs));
}

/** A window spent is a domain result (the seconds to wait), turned into the 429 here. */
function refuseAfter(retryAfter: number): void {
  if (retryAfter > 0) {
    throw new AppError("rate_limited", "Too many requests.", undefined, { "retry-after": String(retryAfter) });
  }
}

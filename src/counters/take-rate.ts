import { AppError } from "../infra/errors";
import type { KeyedRate } from "./quota-leases";
import { type RatePolicy, rateLimitFields } from "./rate-limit-fields";
import type { RateWindows } from "./rate-windows";

/** Keyed decide's window (a quota lease on a server store): a promise only while it claims. */
export function takeKeyedRate(rate: KeyedRate, key: string, nowMs: number): void | Promise<void> {
  const retryAfter = rate.take(key, nowMs);
  if (typeof retryAfter === "number") return refuseAfter(retryAfter);
  return retryAfter.then(refuseAfter);
}

/**
 * Keyed decide's window for a route other than keyed decide (OFREP): a 429 with Retry-After once
 * it is spent, and the draft's RateLimit fields on both answers (keyed decide itself sends none:
 * its hot path stays as benched).
 */
export async function takeKeyedRateFields(
  rate: KeyedRate,
  policy: RatePolicy,
  key: string,
  nowMs: number,
): Promise<Record<string, string>> {
  const retryAfter = await rate.take(key, nowMs);
  const fields = rateLimitFields(policy, rate.remaining(key, nowMs), nowMs);
  refuseAfter(retryAfter, fields);
  return fields;
}

/**
 * A window (`RateWindows` per process, or `QuotaLeases` across processes): a 429 with
 * Retry-After once it is spent. Either way, the draft's `RateLimit` and `RateLimit-Policy`
 * fields, which the route adds to its answer. Synchronous unless a lease claims.
 */
export function takeRate(
  windows: KeyedRate,
  name: string,
  key: string,
  nowMs: number,
): Record<string, string> | Promise<Record<string, string>> {
  const retryAfter = windows.take(key, nowMs);
  if (typeof retryAfter !== "number") return retryAfter.then((r) => fieldsAfter(windows, name, key, nowMs, r));
  return fieldsAfter(windows, name, key, nowMs, retryAfter);
}

function fieldsAfter(
  windows: KeyedRate,
  name: string,
  key: string,
  nowMs: number,
  retryAfter: number,
): Record<string, string> {
  const fields = rateLimitFields(
    { name, limit: windows.limit, windowMs: windows.windowMs },
    windows.remaining(key, nowMs),
    nowMs,
  );
  refuseAfter(retryAfter, fields);
  return fields;
}

/** One window of several a request takes: its windows, the policy's name and the key counted. */
export interface RateTake {
  readonly windows: RateWindows;
  readonly name: string;
  readonly key: string;
}

/**
 * Several per-process windows, innermost first (per client, then per site): a window is taken
 * only when every window before it admitted, so a client refused by its own window spends
 * nothing of a shared one. A 429 with Retry-After at the first refusal; either way one
 * `RateLimit` and `RateLimit-Policy` field listing the policies read so far (the draft's lists).
 */
export function takeRates(takes: readonly RateTake[], nowMs: number): Record<string, string> {
  const policies: string[] = [];
  const limits: string[] = [];
  for (const { windows, name, key } of takes) {
    const retryAfter = windows.take(key, nowMs);
    const one = rateLimitFields(
      { name, limit: windows.limit, windowMs: windows.windowMs },
      windows.remaining(key, nowMs),
      nowMs,
    );
    policies.push(one["ratelimit-policy"] as string);
    limits.push(one.ratelimit as string);
    const fields = { "ratelimit-policy": policies.join(", "), ratelimit: limits.join(", ") };
    if (retryAfter > 0) refuseAfter(retryAfter, fields);
  }
  return { "ratelimit-policy": policies.join(", "), ratelimit: limits.join(", ") };
}

/** A window spent is a domain result (the seconds to wait), turned into the 429 here. */
function refuseAfter(retryAfter: number, fields?: Record<string, string>): void {
  if (retryAfter > 0) {
    throw new AppError("rate_limited", "Too many requests.", undefined, {
      "retry-after": String(retryAfter),
      ...fields,
    });
  }
}

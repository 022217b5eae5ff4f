import type { KeyedRate } from "../counters/quota-leases";
import type { Channel } from "./channel";

/** What the thread answers a take with: Retry-After seconds (0: admitted) and what is left after it. */
interface Taken {
  readonly retryAfter: number;
  readonly remaining: number;
}

/**
 * Keyed decide's window held by the thread, for a route of this thread that spends it too (OFREP):
 * one window per key whichever thread serves the call. `remaining` is what the thread answered
 * this key's latest take with (the route reads it right after its take).
 */
export function threadRate(channel: Channel, limit: number, windowMs: number): KeyedRate {
  const left = new Map<string, number>();
  return {
    limit,
    windowMs,
    take: async (key, nowMs) => {
      const taken = await channel.call<Taken>("rate", "take", [key, nowMs]);
      left.set(key, taken.remaining);
      return taken.retryAfter;
    },
    remaining: (key) => {
      const remaining = left.get(key) ?? limit;
      left.delete(key);
      return remaining;
    },
  };
}

/** The thread's side: takes from its own window. */
export function serveRate(channel: Channel, rate: KeyedRate): void {
  channel.serve("rate", {
    take: async (key: string, nowMs: number): Promise<Taken> => ({
      retryAfter: await rate.take(key, nowMs),
      remaining: rate.remaining(key, nowMs),
    }),
  });
}

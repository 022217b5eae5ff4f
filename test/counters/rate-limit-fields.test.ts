import { describe, expect, it } from "bun:test";
import { MemoryLeaseStore, QuotaLeases } from "../../src/counters/quota-leases";
import { rateLimitFields } from "../../src/counters/rate-limit-fields";
import { RateWindows } from "../../src/counters/rate-windows";
import { memoryLogger } from "../helpers/harness";

describe("RateLimit fields (IETF draft httpapi-ratelimit-headers)", () => {
  it("names the policy's quota and window, and what is left until the window resets", () => {
    const policy = { name: "browser-decide", limit: 200, windowMs: 10_000 };
    expect(rateLimitFields(policy, 150, 1_000_000 + 2_500)).toEqual({
      "ratelimit-policy": '"browser-decide";q=200;w=10',
      ratelimit: '"browser-decide";r=150;t=8',
    });
    expect(rateLimitFields(policy, -3, 1_000_000).ratelimit).toBe('"browser-decide";r=0;t=10');
  });

  it("counts down a per-process window as it admits, and starts it afresh in the next window", () => {
    const windows = new RateWindows(3, 10_000);
    expect(windows.remaining("a", 0)).toBe(3);
    windows.take("a", 0);
    windows.take("a", 1);
    expect(windows.remaining("a", 2)).toBe(1);
    expect(windows.remaining("b", 2)).toBe(3);
    windows.take("a", 3);
    expect(windows.take("a", 4)).toBeGreaterThan(0);
    expect(windows.remaining("a", 5)).toBe(0);
    expect(windows.remaining("a", 10_000)).toBe(3);
  });

  it("counts down a window shared through leases by what every process claimed and this one holds", async () => {
    const store = new MemoryLeaseStore();
    const [one, two] = [1, 2].map(() => new QuotaLeases(100, 10_000, store, memoryLogger(), 1_000, { settleMs: 0 }));
    expect(one?.remaining("k", 0)).toBe(100);
    await one?.take("k", 0);
    await two?.take("k", 0);
    // Each claimed a first chunk (a sixteenth of the 100 left: 6) and spent one. What each may
    // still admit, as far as it knows: its own 5 left, and the window less the claims it has
    // seen (the first process saw only its own).
    expect(one?.remaining("k", 1)).toBe(100 - 6 + 5);
    expect(two?.remaining("k", 1)).toBe(100 - 12 + 5);
    expect(one?.remaining("k", 10_000)).toBe(100);
  });
});

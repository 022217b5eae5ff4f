import { describe, expect, test } from "bun:test";
import { combineSegments } from "../../bench/saturation";
import type { WrkResult } from "../../bench/wrk";

function segment(over: Partial<WrkResult>): WrkResult {
  return {
    rps: 0,
    requests: 0,
    duration_s: 1,
    p50_ms: 1,
    p90_ms: 2,
    p99_ms: 3,
    p999_ms: 4,
    mean_ms: 1,
    max_ms: 5,
    non_2xx: 0,
    non_2xx_share: 0,
    socket_errors: { connect: 0, read: 0, write: 0, timeout: 0 },
    threads: 1,
    connections: 64,
    generator_cpu_cores: 0.3,
    server_cpu_cores: 1,
    ...over,
  };
}

describe("combineSegments (the bench's alternating saturation and ceiling runs)", () => {
  test("throughput over the whole measured time, medians weighted by requests, tails from the worst segment", () => {
    const out = combineSegments([
      segment({
        rps: 30_000,
        requests: 150_000,
        duration_s: 5,
        p50_ms: 1,
        p99_ms: 4,
        p999_ms: 9,
        max_ms: 20,
        non_2xx: 3,
      }),
      segment({
        rps: 10_000,
        requests: 50_000,
        duration_s: 5,
        p50_ms: 3,
        p99_ms: 12,
        p999_ms: 15,
        max_ms: 30,
        server_cpu_cores: 0.5,
      }),
    ]);
    expect(out.rps).toBe(20_000);
    expect(out.requests).toBe(200_000);
    expect(out.p50_ms).toBe(1.5);
    expect([out.p99_ms, out.p999_ms, out.max_ms]).toEqual([12, 15, 30]);
    expect(out.non_2xx).toBe(3);
    expect(out.server_cpu_cores).toBe(0.75);
    expect(out.segments.map((s) => s.rps)).toEqual([30_000, 10_000]);
  });

  test("an unknown server share stays unknown, and no segment is an error", () => {
    expect(combineSegments([segment({ requests: 10, server_cpu_cores: null })]).server_cpu_cores).toBeNull();
    expect(() => combineSegments([])).toThrow("no segment");
  });
});

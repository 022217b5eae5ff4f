import { describe, expect, it } from "bun:test";
import type { DecisionEngine } from "../../src/decide/engine";
import type { DecideRequest } from "../../src/decide/request";
import { ImpactSamples } from "../../src/impact/samples";

/** A request no evaluation can run: a pick is then captured as nothing, and never throws. */
const broken = { preview: false, input: { features: [] }, now: 0 } as unknown as DecideRequest;
const failing = {
  evaluate: () => {
    throw new Error("no store");
  },
} as unknown as DecisionEngine;

describe("ImpactSamples", () => {
  it("keeps nothing and throws nothing when sampling is off (every: 0)", () => {
    const samples = new ImpactSamples({ every: 0 });
    for (let i = 0; i < 1000; i++) samples.offer(failing, broken, "{}");
    expect(samples.samplesOf("t", "s")).toEqual([]);
  });

  it("never throws into the request when the capture fails", async () => {
    const samples = new ImpactSamples({ every: 1 });
    expect(() => samples.offer(failing, broken, "not json")).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(samples.samplesOf("t", "s")).toEqual([]);
  });

  it("hashes a subject with a key of its own: stable within a process, 16 hex characters", () => {
    const a = new ImpactSamples();
    const b = new ImpactSamples();
    expect(a.hashSubject("reader-1")).toMatch(/^[0-9a-f]{16}$/);
    expect(a.hashSubject("reader-1")).toBe(a.hashSubject("reader-1"));
    expect(a.hashSubject("reader-1")).not.toBe(b.hashSubject("reader-1"));
  });
});

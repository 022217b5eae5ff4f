import { describe, expect, it } from "bun:test";
import { AbsenceFilter } from "../../src/counters/absence-filter";

describe("absence filter", () => {
  it("never calls a key it holds absent, and rarely holds a key it was never given", () => {
    const filter = new AbsenceFilter(20_000);
    const held = Array.from({ length: 20_000 }, (_, i) => `t\u0001s\u0001articles\u0001device-${i}\u00012026-11`);
    for (const k of held) filter.add(k);
    expect(held.every((k) => filter.mightContain(k))).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 20_000; i++)
      if (filter.mightContain(`t\u0001s\u0001articles\u0001other-${i}\u00012026-11`)) falsePositives++;
    expect(falsePositives / 20_000).toBeLessThan(0.02);
  });
});

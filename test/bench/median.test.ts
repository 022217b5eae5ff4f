import { describe, expect, it } from "bun:test";
import { median } from "../../bench/stats";

describe("median (the pinned bench's rounds, flush-cost's flushes)", () => {
  it("takes the middle value of an odd count, whatever the order", () => {
    expect(median([54.2, 1.7, 1.96])).toBe(1.96);
  });
  it("takes the mean of the two middle values of an even count", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
  it("does not reorder what it is given", () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });
  it("has no middle of nothing", () => {
    expect(median([])).toBeNaN();
  });
});

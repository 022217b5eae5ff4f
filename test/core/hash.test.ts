import { describe, expect, test } from "bun:test";
import { bucketHash, compileExperiment, fmix32, fnv1a32 } from "../../src/core/hash";

/** An independent reference: TextEncoder for UTF-8, BigInt arithmetic for the products. */
function referenceFnv1a(text: string): number {
  let h = 0x811c9dc5n;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * 0x01000193n) & 0xffffffffn;
  }
  return Number(h);
}
function referenceFmix(x: number): number {
  let h = BigInt(x);
  h ^= h >> 16n;
  h = (h * 0x85ebca6bn) & 0xffffffffn;
  h ^= h >> 13n;
  h = (h * 0xc2b2ae35n) & 0xffffffffn;
  h ^= h >> 16n;
  return Number(h);
}

describe("fnv1a32", () => {
  test.each([
    ["", 0x811c9dc5],
    ["a", 0xe40c292c],
    ["foobar", 0xbf9cf968],
  ])("published test vector %p", (input, expected) => {
    expect(fnv1a32(input)).toBe(expected);
  });

  test.each([["user-1"], ["é"], ["€uro"], ["emoji 😀 subject"], ["lone \ud800 surrogate"], ["日本語のユーザー"]])(
    "matches a UTF-8 reference for %p",
    (input) => {
      expect(fnv1a32(input)).toBe(referenceFnv1a(input));
    },
  );

  test("continuing from a prefix state equals hashing the whole string", () => {
    expect(fnv1a32("subject", fnv1a32("salt:"))).toBe(fnv1a32("salt:subject"));
  });
});

describe("fmix32 and bucketHash", () => {
  test.each([[0], [1], [0xdeadbeef], [0xffffffff]])("fmix32(%p) matches the reference", (x) => {
    expect(fmix32(x)).toBe(referenceFmix(x));
  });

  test("bucketHash is fmix32 of fnv1a32 of salt:subject", () => {
    expect(bucketHash("wall-2026", "u-42")).toBe(referenceFmix(referenceFnv1a("wall-2026:u-42")));
  });
});

describe("compileExperiment", () => {
  test("assignment follows the documented formula (known expectations)", () => {
    const e = compileExperiment("wall", "wall-2026", { b: 30, a: 70 });
    for (const subject of ["u-1", "u-2", "u-3", "device-abc", "ü-5"]) {
      const bucket = Math.floor((referenceFmix(referenceFnv1a(`wall-2026:${subject}`)) * 100) / 2 ** 32);
      // Variants in code-unit order: "a" owns buckets 0..69, "b" 70..99.
      expect(e.assign(subject)).toBe(bucket < 70 ? "a" : "b");
    }
  });

  test("the same subject always gets the same variant, across compiled copies", () => {
    const one = compileExperiment("x", "salt-1", { a: 1, b: 1, c: 1 });
    const two = compileExperiment("x", "salt-1", { c: 1, b: 1, a: 1 });
    for (let i = 0; i < 200; i++) expect(two.assign(`s${i}`)).toBe(one.assign(`s${i}`));
  });

  test("a different salt reshuffles subjects", () => {
    const one = compileExperiment("x", "salt-1", { a: 1, b: 1 });
    const two = compileExperiment("x", "salt-2", { a: 1, b: 1 });
    let differ = 0;
    for (let i = 0; i < 1000; i++) if (one.assign(`s${i}`) !== two.assign(`s${i}`)) differ++;
    expect(differ).toBeGreaterThan(400);
    expect(differ).toBeLessThan(600);
  });

  test.each([[{ a: 50, b: 50 }], [{ a: 70, b: 30 }], [{ control: 1, one: 1, two: 2 }], [{ a: 90, b: 9, c: 1 }]])(
    "10k subjects spread within ±3 points of the weights %o",
    (weights) => {
      const e = compileExperiment("x", "dist", weights);
      const counts: Record<string, number> = {};
      const n = 10_000;
      for (let i = 0; i < n; i++) {
        const v = e.assign(`user-${i}`);
        counts[v] = (counts[v] ?? 0) + 1;
      }
      const total = Object.values(weights).reduce((s, w) => s + w, 0);
      for (const [variant, w] of Object.entries(weights)) {
        expect(Math.abs((counts[variant] ?? 0) / n - w / total)).toBeLessThan(0.03);
      }
    },
  );

  test("a single variant takes everyone", () => {
    const e = compileExperiment("x", "s", { only: 5 });
    expect(e.assign("anyone")).toBe("only");
  });
});

import { describe, expect, it } from "bun:test";
import { compilesIn, describeCompiles } from "../../bench/jit-compiles";

// Lines as Bun 1.4's JavaScriptCore prints them with BUN_JSC_reportCompileTimes=true.
const OUTPUT = [
  "Optimized require#BgRxYB:[0x57ca0603820->0x57c9fbc5c80, LLIntFunctionCall, 860 (StrictMode)] using Baseline with Baseline into 13056 bytes in 0.211069 ms.",
  '{"level":"info","message":"listening"}',
  "Optimized holdMeters#CAzLPC:[0x5ceb098a400->0x5cead194fe0->0x5cea5a5ed00, NoneFunctionCall, 707 (DidTryToEnterInLoop) (StrictMode)] using FTL with FTL into 16416 bytes in 134.998880 ms (DFG: 87.241551, B3: 47.757329).",
  "Optimized #B2zbHw:[0x57ca1a76cc0->0x57ca0603740->0x57ca1291d80, NoneFunctionCall, 40 (StrictMode)] using DFG with DFG into 640 bytes in 1.451009 ms.",
  "Optimized settle#C5Kqcj:[0x56557b02be0->0x56568c503a0->0x5655e3cb980, NoneFunctionCall, 135 (StrictMode)] using FTL with FTL into 2624 bytes in 26.742130 ms (DFG: 2.639651, B3: 24.1).",
].join("\n");

describe("compilesIn (tail-variants' COMPILES=1)", () => {
  it("reads the optimizing compiles and leaves out Baseline ones and other output", () => {
    expect(compilesIn(OUTPUT)).toEqual([
      { name: "holdMeters", tier: "FTL", ms: 134.99888 },
      { name: "(anonymous)", tier: "DFG", ms: 1.451009 },
      { name: "settle", tier: "FTL", ms: 26.74213 },
    ]);
  });
  it("finds none in output without them", () => {
    expect(compilesIn('{"message":"listening"}\n')).toEqual([]);
  });
  it("sums each tier and names the longest first", () => {
    expect(describeCompiles(compilesIn(OUTPUT), 2)).toBe(
      "1 DFG (1.5 ms), 2 FTL (161.7 ms); longest: holdMeters FTL 135.0, settle FTL 26.7 ms",
    );
  });
});

import { describe, expect, it } from "bun:test";
import { compilesIn, describeCompiles, reoptimizationsIn } from "../../bench/jit-compiles";

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

describe("reoptimizationsIn (BUN_JSC_verboseOSR output)", () => {
  const VERBOSE = [
    "Generated JIT code for DFG OSR exit #3 (D@44, bc#0, BadIndexingType) from applyTicks#A5as5q:[0x5aa64339de0->0x5aa5d2cef00, DFGFunctionCall, 232 (StrictMode)], with operands = arg1:InJSStack",
    "Generated JIT code for FTL OSR exit #84 (D@1616, bc#610, BadConstantCache) from holdMeters#CAzLPC:[0x5ceb098a400->0x5cead194fe0, FTLFunctionCall, 707 (StrictMode)], with operands",
    "holdMeters#CAzLPC:[0x5cead194fe0->0x5cea5a5ed00, BaselineFunctionCall, 707 (DidTryToEnterInLoop) (StrictMode) (HadFTLReplacement)]: Entered reoptimize",
    "Generated JIT code for DFG OSR exit #2 (D@9, bc#656 --> withinDeadline#Egjkvp:<0x5cead197120> bc#32, BadCache) from holdMeters#CAzLPC:[0x1->0x2, DFGFunctionCall, 707 (StrictMode)], with operands",
    "holdMeters#CAzLPC:[0x5cead194fe0->0x5cea5a5ed00, BaselineFunctionCall, 707 (StrictMode)]: Entered reoptimize",
    "applyTicks#A5as5q:[0x5aa64339de0->0x5aa5d2cef00, BaselineFunctionCall, 232 (StrictMode)]: Entered reoptimize",
    "holdMeters#CAzLPC:[0x5cead194fe0->0x5cea5a5ed00, BaselineFunctionCall, 707 (StrictMode)]: Entered optimize with bytecodeIndex = bc#0",
  ].join("\n");

  it("lists each reoptimization with the exits of that function before it, newest last", () => {
    expect(reoptimizationsIn(VERBOSE)).toEqual([
      { name: "holdMeters", exits: ["bc#610, BadConstantCache"] },
      { name: "holdMeters", exits: ["bc#610, BadConstantCache", "bc#656 --> withinDeadline#Egjkvp: bc#32, BadCache"] },
      { name: "applyTicks", exits: ["bc#0, BadIndexingType"] },
    ]);
  });
  it("keeps only as many exits as asked", () => {
    expect(reoptimizationsIn(VERBOSE, 1)[1]?.exits).toEqual(["bc#656 --> withinDeadline#Egjkvp: bc#32, BadCache"]);
  });
  it("finds none where nothing was compiled again", () => {
    expect(reoptimizationsIn(VERBOSE.split("\n").slice(0, 2).join("\n"))).toEqual([]);
  });
});

import { describe, expect, it } from "bun:test";
import { collectionsIn, describeCollections } from "../../bench/gc-log";

// Lines as Bun 1.4's JavaScriptCore prints them with BUN_JSC_logGC=true (shortened between the
// fields read): a cycle in one stop, a cycle of three stops on another heap, other output between.
const OUTPUT = [
  "[GC<0x44810e18118>: START M 44627kb => EdenCollection, a=0kb hf=0.000 mu=0.600 v=0kb (C:0 M:0) o=25 b=17 i#1:N<CsMsrShDMsm(17)SrbBcs> 0+17 i#3:P<Msm(0)ShMsrBcsCsSrbDCbDomoWsOJw>Pbc => 24040kb, p=1.187950ms (max 85.663800), cycle 1.129450ms END]",
  '{"level":"info","message":"flushed"}',
  "[GC<0x52bb7e18118>: START M 7218kb => EdenCollection, a=0kb hf=0.000 mu=0.600 v=0kb (C:0 M:0 P1:0) o=1 b=3 i#1:N<CsMsrShDMsm(5)SrbBcs> 2+5 p=1.233194ms (max 2.115704)...]",
  "[GC<0x52bb7e18118>: M a=900kb hf=0.504 mu=0.298 v=2662kb (C:1549 M:0 P1:1112) o=1 b=1 0+1 p=0.25ms (max 2.115704)...]",
  "[GC<0x52bb7e18118>: M a=900kb i#6:P<CsMsm(0)ShMsrSrbDBcsCbDomoJwWsO>Pbc => 7518kb, p=2.474593ms (max 2.474593), cycle 4.881680ms END]",
  "[GC<0x44810e18118>: START M 3344kb => FullCollection, a=0kb hf=0.000 mu=0.600 v=0kb o=0 b=801 i#1:N<CsMsrShDMsm(0)SrbBcs> 518+0 p=1.003675ms (max 1.230780)...]",
].join("\n");

describe("collectionsIn (tail-variants' GCS=1)", () => {
  it("counts each heap's cycles by kind and every stop of the world in them", () => {
    expect(collectionsIn(OUTPUT)).toEqual([
      { heap: "0x52bb7e18118", kind: "EdenCollection", cycles: 1, pauses: [1.233194, 0.25, 2.474593] },
      { heap: "0x44810e18118", kind: "EdenCollection", cycles: 1, pauses: [1.18795] },
      { heap: "0x44810e18118", kind: "FullCollection", cycles: 1, pauses: [1.003675] },
    ]);
  });
  it("leaves out the stops of a cycle that started before the piece read", () => {
    const piece = OUTPUT.split("\n").slice(3).join("\n");
    expect(collectionsIn(piece)).toEqual([
      { heap: "0x44810e18118", kind: "FullCollection", cycles: 1, pauses: [1.003675] },
    ]);
  });
  it("finds none in output without them", () => {
    expect(collectionsIn('{"message":"listening"}\n')).toEqual([]);
  });
  it("describes the time stopped per heap and kind", () => {
    expect(describeCollections(collectionsIn(OUTPUT))).toEqual([
      "0x52bb7e18118 EdenCollection: 1 cycles, 3 stops, 4.0 ms stopped (mean 1.32, longest 2.5)",
      "0x44810e18118 EdenCollection: 1 cycles, 1 stops, 1.2 ms stopped (mean 1.19, longest 1.2)",
      "0x44810e18118 FullCollection: 1 cycles, 1 stops, 1.0 ms stopped (mean 1.00, longest 1.0)",
    ]);
  });
});

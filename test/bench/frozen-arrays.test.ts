import { describe, expect, it } from "bun:test";
import { runBun } from "../helpers/process";

describe("bench/frozen-arrays.ts", () => {
  it("times each kind of array and names the storage JavaScriptCore gave it", async () => {
    const { code, stdout, stderr } = await runBun(["bench/frozen-arrays.ts"], {
      PATH: process.env.PATH ?? "",
      ROUNDS: "1",
      CALLS: "2000",
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const rows = stdout
      .split("\n")
      .map((l) => l.match(/^\| ([a-z-]+) \| (\w+) \| ([\d.]+) ns \| ([\d.]+) ns \| ([\d.]+) ns \|$/))
      .filter((m) => m !== null)
      .map((m) => [m[1], m[2]]);
    expect(rows).toEqual([
      ["plain", "ArrayWithContiguous"],
      ["frozen", "ArrayWithArrayStorage"],
      ["sealed", "ArrayWithArrayStorage"],
      ["non-extensible", "ArrayWithArrayStorage"],
    ]);
    expect(stdout).toContain("(median of 1 rounds of 2,000 calls, 5 strings an array)");
  });

  it.each([
    ["ROUNDS", "0"],
    ["ROUNDS", "three"],
    ["CALLS", "-5"],
    ["CALLS", "1.5"],
  ])("refuses %s=%p with a message and measures nothing", async (name, value) => {
    const { code, stdout, stderr } = await runBun(["bench/frozen-arrays.ts"], {
      PATH: process.env.PATH ?? "",
      [name]: value,
    });
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toContain(`${name} must be a whole number of at least 1 (got "${value}")`);
  });
});

import { describe, expect, it } from "bun:test";
import { runBun } from "../helpers/process";

const url = process.env.DATABASE_URL;

describe("bench/pg-driver-cost.ts", () => {
  it("refuses to run without DATABASE_URL and says what to set", async () => {
    const { code, stdout, stderr } = await runBun(["bench/pg-driver-cost.ts", "10", "2", "1"], {
      PATH: process.env.PATH ?? "",
    });
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toContain("set DATABASE_URL");
  });

  it.skipIf(!url)(
    "measures both drivers in alternating rounds, each checked to answer the same value",
    async () => {
      const { code, stdout, stderr } = await runBun(["bench/pg-driver-cost.ts", "40", "4", "2"], {
        PATH: process.env.PATH ?? "",
        DATABASE_URL: url as string,
      });
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      expect(stdout).toMatch(/^one 1,100-byte write, both ends' CPU: node:net [\d.]+ µs, Bun\.connect [\d.]+ µs$/m);
      const rounds = stdout
        .split("\n")
        .filter((l) => l.startsWith("round "))
        .map((l) =>
          l.match(/^round (\d) (postgres\.js|Bun\.SQL) +([\d.]+) µs user \+ ([\d.]+) µs system a statement, (\d+) ms$/),
        );
      expect(rounds.length).toBe(4);
      for (const m of rounds) expect(m).not.toBeNull();
      // Round 2 runs the drivers in the other order.
      expect(rounds.map((m) => `${m?.[1]} ${m?.[2]}`)).toEqual([
        "1 postgres.js",
        "1 Bun.SQL",
        "2 Bun.SQL",
        "2 postgres.js",
      ]);
      for (const m of rounds) expect(Number(m?.[3]) + Number(m?.[4])).toBeGreaterThan(0);
    },
    30_000,
  );
});

import { describe, expect, it } from "bun:test";
import { parseArgs } from "../../bench/config";

describe("bench options: the soak scenario", () => {
  it("runs every scenario by default, the soak last at 14 weeks of 1,000 readers (200 on a server)", () => {
    expect(parseArgs([], {})).toMatchObject({ scenario: "all", soakWeeks: 14, soakReaders: 1000 });
    expect(parseArgs([], { DATABASE_URL: "postgres://x@127.0.0.1/db" })).toMatchObject({ soakReaders: 200 });
  });

  it("selects the soak alone, with its own weeks and readers, and smaller ones in smoke runs", () => {
    expect(parseArgs(["--", "--scenario", "soak", "--weeks", "26", "--readers", "500"], {})).toMatchObject({
      scenario: "soak",
      soakWeeks: 26,
      soakReaders: 500,
    });
    expect(parseArgs(["--scenario", "soak", "--smoke"], {})).toMatchObject({
      mode: "smoke",
      soakWeeks: 1,
      soakReaders: 20,
    });
  });

  it("refuses an unknown scenario and a bad number of weeks", () => {
    expect(() => parseArgs(["--scenario", "nonsense"], {})).toThrow("--scenario is soak, memory or all");
    expect(parseArgs(["--scenario", "memory", "--quick"], {})).toMatchObject({
      scenario: "memory",
      memorySubjects: 100_000,
    });
    expect(() => parseArgs(["--weeks", "0"], {})).toThrow("--weeks needs an integer");
  });
});

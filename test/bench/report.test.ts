import { describe, expect, spyOn, test } from "bun:test";
import type { MemoryResult } from "../../bench/memory";
import {
  type BenchResults,
  contentionNotes,
  contentionOf,
  evaluateTargets,
  printTable,
  targetsFor,
} from "../../bench/report";

describe("bench report: contention", () => {
  test("what neither our generator nor our server used is the busy cores less interrupts, steal and ours", () => {
    expect(contentionOf({ busy: 1.9, irq: 0.2, steal: 0.3 }, 1.1)).toEqual({
      machine_busy_cores: 1.9,
      interrupt_cores: 0.2,
      steal_cores: 0.3,
      other_cores: 0.3,
    });
    // Ours measured a little above what the machine reports: never below zero.
    expect(contentionOf({ busy: 1, irq: 0.1, steal: 0 }, 1.2).other_cores).toBe(0);
  });

  test("without /proc/stat there is nothing to report", () => {
    const c = contentionOf({ busy: Number.NaN, irq: Number.NaN, steal: Number.NaN }, 1);
    expect(c.steal_cores).toBeNull();
    expect(c.other_cores).toBeNull();
  });

  test("calls out scenarios that shared the machine or lost CPU to steal, and only those", () => {
    const quiet = { machine_busy_cores: 1.5, interrupt_cores: 0.1, steal_cores: 0.01, other_cores: 0.05 };
    expect(contentionNotes({ saturation: quiet, memory: quiet })).toEqual([]);
    expect(contentionNotes(undefined)).toEqual([]);
    const notes = contentionNotes({
      saturation: { ...quiet, other_cores: 0.6 },
      spec_rate: { ...quiet, steal_cores: 0.12 },
      memory: { ...quiet, steal_cores: null, other_cores: null },
    });
    expect(notes).toHaveLength(2);
    expect(notes[0]).toBe("note: other processes used CPU during saturation (0.6 cores)");
    expect(notes[1]).toStartWith(
      "note: the hypervisor took CPU from this machine (steal) during spec_rate (0.12 cores);",
    );
  });
});

describe("bench report: targets", () => {
  const base: BenchResults = {
    timestamp: "2026-11-21T00:00:00.000Z",
    mode: "full",
    store: "embedded",
    machine: { cores: 2, cpu_model: "test", mem_total_gb: 1, kernel: "test", busy_cores_before_start: 0 },
    versions: { bun: "1", node: "1", wrk: "1", cc: "1" },
    config: {},
    errors: [],
  };
  const memory = (subjects: number, rss: number) =>
    ({ subjects_touched: subjects, rss_mb: rss, rss_mb_at_1m_subjects: subjects >= 1_000_000 ? rss : null }) as
      | MemoryResult
      | undefined;

  test("a smoke run judges no target and prints no verdict; a quick run still does", () => {
    const saturation = { ratio_to_ceiling: 0.42 } as BenchResults["saturation"];
    const smoke: BenchResults = { ...base, mode: "smoke", saturation };
    expect(targetsFor(smoke)).toBeUndefined();
    expect(targetsFor({ ...smoke, mode: "quick" })?.saturation_ratio?.met).toBe(true);
    const printed: unknown[] = [];
    const log = spyOn(console, "log").mockImplementation((...args: unknown[]) => void printed.push(...args));
    const table = spyOn(console, "table").mockImplementation((...args: unknown[]) => void printed.push(...args));
    try {
      // Even a smoke result that carries targets (an older file) prints none of them.
      printTable({ ...smoke, targets: evaluateTargets(smoke) });
      const smokeText = JSON.stringify(printed);
      expect(smokeText).toContain("no target is judged");
      expect(smokeText).not.toContain("saturation_ratio");
      expect(smokeText).not.toContain('"yes"');
      printed.length = 0;
      printTable({ ...smoke, mode: "quick", targets: evaluateTargets(smoke) });
      expect(JSON.stringify(printed)).toContain("saturation_ratio");
    } finally {
      log.mockRestore();
      table.mockRestore();
    }
  });

  test("a scenario that did not run is neither met nor missed", () => {
    const t = evaluateTargets(base);
    for (const name of ["saturation_ratio", "spec_rate_p99", "spec_rate_429", "over_limit_exact", "memory_rss"]) {
      expect(t[name]?.met).toBeNull();
    }
  });

  test("memory is judged only at one million subjects, and strictly under 300 MB", () => {
    expect(evaluateTargets({ ...base, memory: memory(100_000, 200) }).memory_rss?.met).toBeNull();
    expect(evaluateTargets({ ...base, memory: memory(1_000_000, 299.9) }).memory_rss?.met).toBe(true);
    expect(evaluateTargets({ ...base, memory: memory(1_000_000, 300) }).memory_rss?.met).toBe(false);
  });

  test("saturation at 0.40 of the ceiling and spec-rate p99 at 1 ms are met; above or below the line is not", () => {
    const sat = (ratio: number) =>
      evaluateTargets({ ...base, saturation: { ratio_to_ceiling: ratio } as BenchResults["saturation"] })
        .saturation_ratio?.met;
    expect(sat(0.4)).toBe(true);
    expect(sat(0.399)).toBe(false);
    const p99 = (ms: number) =>
      evaluateTargets({ ...base, spec_rate: { p99_ms: ms, status_429: 0 } as BenchResults["spec_rate"] }).spec_rate_p99
        ?.met;
    expect(p99(1)).toBe(true);
    expect(p99(1.01)).toBe(false);
  });
});

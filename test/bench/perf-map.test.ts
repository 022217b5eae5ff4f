import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CodeLoad, liveRegions, parseJitDump, perfMapText, writePerfMap } from "../../bench/perf-map";

/** A jitdump file as perf specifies it, with the given code loads (and one record of another kind). */
function jitdump(loads: { t: number; address: number; size: number; name: string }[]): Uint8Array {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(40);
  header.writeUInt32LE(0x4a695444, 0);
  header.writeUInt32LE(1, 4);
  header.writeUInt32LE(40, 8);
  parts.push(header);
  const other = Buffer.alloc(24);
  other.writeUInt32LE(6, 0); // a record this reader skips
  other.writeUInt32LE(24, 4);
  parts.push(other);
  for (const l of loads) {
    const name = Buffer.from(`${l.name}\0`, "utf8");
    const code = Buffer.alloc(l.size);
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0, 0);
    record.writeUInt32LE(56 + name.length + code.length, 4);
    record.writeBigUInt64LE(BigInt(l.t), 8);
    record.writeBigUInt64LE(BigInt(l.address), 32);
    record.writeBigUInt64LE(BigInt(l.size), 40);
    parts.push(record, name, code);
  }
  return new Uint8Array(Buffer.concat(parts));
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("bench/perf-map: JavaScriptCore jitdump to a perf map", () => {
  test("reads every code load, and a later load replaces the older regions it overlaps", () => {
    const loads = parseJitDump(
      jitdump([
        { t: 1, address: 0x1000, size: 0x100, name: "JSC-Baseline: old#A" },
        { t: 2, address: 0x2000, size: 0x40, name: "JSC-FTL: kept#B" },
        { t: 3, address: 0x1080, size: 0x100, name: "JSC-DFG: newer#C" },
      ]),
    );
    expect(loads.map((l) => l.name)).toEqual(["JSC-Baseline: old#A", "JSC-FTL: kept#B", "JSC-DFG: newer#C"]);
    expect(perfMapText(liveRegions(loads))).toBe("1080 100 JSC-DFG: newer#C\n2000 40 JSC-FTL: kept#B\n");
  });

  test("orders by time, not by file position, and keeps regions that only touch", () => {
    const at = (t: number, address: number, name: string): CodeLoad => ({
      timestamp: BigInt(t),
      address: BigInt(address),
      size: 0x10n,
      name,
    });
    const live = liveRegions([at(5, 0x100, "later"), at(1, 0x108, "earlier"), at(2, 0x110, "touching")]);
    expect(live.map((r) => r.name)).toEqual(["later", "touching"]);
  });

  test("refuses a file that is not a jitdump", () => {
    expect(() => parseJitDump(new Uint8Array(64))).toThrow("not a jitdump file");
  });

  test("names the JIT code of a real Bun process", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-jitdump-"));
    dirs.push(dir);
    const script = join(dir, "hot.js");
    // JavaScriptCore's compiler threads write the dump, and a process that exits as soon as its
    // loop is done can leave their last records unwritten (seen in 2 of 6 runs, and in CI). So the
    // child stays until its own dump names the function, for at most 10 s; the test checks the map.
    writeFileSync(
      script,
      "const { readdirSync, readFileSync } = require('node:fs');\n" +
        "function hotLoopForPerfMap(n) { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; }\n" +
        "let t = 0; for (let k = 0; k < 2000; k++) t += hotLoopForPerfMap(5000); console.log(t);\n" +
        "const dir = process.env.BUN_JSC_jitDumpDirectory, until = Date.now() + 10000;\n" +
        "const written = () => readdirSync(dir).some((f) => f.endsWith('-' + process.pid + '.dump') &&\n" +
        "  readFileSync(dir + '/' + f).includes('hotLoopForPerfMap'));\n" +
        "(function wait() { if (!written() && Date.now() < until) setTimeout(wait, 20); })();\n",
    );
    const child = Bun.spawn([process.execPath, script], {
      env: { ...process.env, BUN_JSC_useJITDump: "1", BUN_JSC_jitDumpDirectory: dir },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await child.exited).toBe(0);
    const dump = readdirSync(dir).find((f) => f.endsWith(`-${child.pid}.dump`));
    expect(dump).toBeDefined();
    const out = join(dir, "perf.map");
    const done = writePerfMap(dir, child.pid, out);
    expect(done.regions).toBeGreaterThan(0);
    const lines = readFileSync(out, "utf8").trim().split("\n");
    expect(lines.every((l) => /^[0-9a-f]+ [0-9a-f]+ \S/.test(l))).toBe(true);
    expect(lines.some((l) => l.includes("hotLoopForPerfMap"))).toBe(true);
  });
});

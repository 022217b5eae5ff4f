/**
 * Names the JavaScript frames in `perf` profiles of a Bun process: reads the jitdump files
 * JavaScriptCore writes and writes the perf map that `perf report` and `perf script` read for a
 * process's JIT code (`/tmp/perf-<pid>.map`, one "start size name" line per code region).
 *
 *   BUN_JSC_useJITDump=1 BUN_JSC_jitDumpDirectory=/tmp/jd bun --smol src/main.ts   # the server
 *   perf record -g -p <pid> -- sleep 5                                             # under load
 *   bun bench/perf-map.ts /tmp/jd <pid>                                            # then report
 *
 * Written here because `perf inject --jit`, the usual route, finds no dump to inject: it looks
 * for a file named `jit-<pid>.dump`, and JavaScriptCore names its files `jit-<n>-<pid>.dump`.
 * JavaScriptCore's compiler threads write the dumps as they finish, so read them after the process
 * has run a while (one that exits right after its code compiled can lose the last records).
 * JavaScriptCore also reuses the addresses of code it has thrown away, so a region loaded later
 * replaces every older region it overlaps (the map describes the code at the end of the run).
 *
 * The jitdump layout is perf's (tools/perf/Documentation/jitdump-specification.txt): a 40-byte
 * header (magic "JiTD" as a native-endian u32, version, header size, ...), then records of
 * { id u32, total size u32, timestamp u64 }; a code load (id 0) goes on with pid u32, tid u32,
 * vma u64, code address u64, code size u64, code index u64, a NUL-terminated name, the code.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MAGIC = 0x4a695444;
const CODE_LOAD = 0;

export interface CodeLoad {
  readonly timestamp: bigint;
  readonly address: bigint;
  readonly size: bigint;
  readonly name: string;
}

/** The code loads of one jitdump file, in file order. Throws on a file that is not a jitdump. */
export function parseJitDump(bytes: Uint8Array): CodeLoad[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 40 || view.getUint32(0, true) !== MAGIC) throw new Error("not a jitdump file (bad magic)");
  const loads: CodeLoad[] = [];
  let at = view.getUint32(8, true);
  while (at + 16 <= bytes.byteLength) {
    const id = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    // A record cut short (the process was still writing) ends the file.
    if (size < 16 || at + size > bytes.byteLength) break;
    if (id === CODE_LOAD && size >= 56) {
      const nameStart = at + 56;
      const nameEnd = bytes.indexOf(0, nameStart);
      if (nameEnd === -1 || nameEnd >= at + size) throw new Error(`code load at byte ${at} has no name`);
      loads.push({
        timestamp: view.getBigUint64(at + 8, true),
        address: view.getBigUint64(at + 32, true),
        size: view.getBigUint64(at + 40, true),
        name: Buffer.from(bytes.subarray(nameStart, nameEnd)).toString("utf8"),
      });
    }
    at += size;
  }
  return loads;
}

/**
 * The regions live at the end: loads in timestamp order, each replacing every earlier region it
 * overlaps. Sorted by address.
 */
export function liveRegions(loads: readonly CodeLoad[]): CodeLoad[] {
  const ordered = [...loads].sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
  let live: CodeLoad[] = [];
  for (const load of ordered) {
    const end = load.address + load.size;
    live = live.filter((r) => r.address + r.size <= load.address || r.address >= end);
    live.push(load);
  }
  return live.sort((a, b) => (a.address < b.address ? -1 : 1));
}

/** The perf map text: "start size name", hexadecimal without prefix, one region a line. */
export function perfMapText(regions: readonly CodeLoad[]): string {
  return regions.map((r) => `${r.address.toString(16)} ${r.size.toString(16)} ${r.name}\n`).join("");
}

/** Writes /tmp/perf-<pid>.map from the process's jitdump files in `dir`; returns the path and counts. */
export function writePerfMap(dir: string, pid: number, out = `/tmp/perf-${pid}.map`) {
  const files = readdirSync(dir).filter((f) => f.startsWith("jit-") && f.endsWith(`-${pid}.dump`));
  if (files.length === 0) throw new Error(`no jit-*-${pid}.dump in ${dir}`);
  const loads = files.flatMap((f) => parseJitDump(readFileSync(join(dir, f))));
  const regions = liveRegions(loads);
  writeFileSync(out, perfMapText(regions));
  return { out, files: files.length, loads: loads.length, regions: regions.length };
}

if (import.meta.main) {
  const [dir, pid, out] = process.argv.slice(2);
  if (!dir || !pid || !/^\d+$/.test(pid)) {
    console.error("usage: bun bench/perf-map.ts <jitdump directory> <pid> [out file]");
    process.exit(2);
  }
  const done = writePerfMap(dir, Number(pid), out);
  console.log(`${done.out}: ${done.regions} regions from ${done.loads} code loads in ${done.files} file(s)`);
}

/**
 * What a full collection hands back to the OS under each allocator purge delay:
 * `npx bun bench/allocator-purge.ts [delays]` (default `10,1000,10000,-1`, milliseconds; -1 is
 * mimalloc's "never"). For each it runs a child Bun (`--smol`, as `npm start`) with
 * `MIMALLOC_PURGE_DELAY` set, which fills about 700 MB with small objects, drops them, and prints
 * its RSS after `Bun.gc(true)` (what the server's quiet-time collection runs) and after
 * `fullGC()` of `bun:jsc` (a collection that does not ask the allocator to purge).
 */
import { fullGC } from "bun:jsc";
import { readFileSync } from "node:fs";

const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync("/proc/self/status", "latin1"))?.[1]) / 1024;

function fill(n: number): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < n; i++) out.push({ i, s: `${"x".repeat(50)}${i}`, b: new Uint8Array(64) });
  return out;
}

if (process.env.PURGE_PROBE_CHILD === "1") {
  let held = fill(2_000_000);
  const peak = rssMb();
  held = [];
  fullGC();
  const afterFull = rssMb();
  held = fill(1_000_000);
  held = [];
  Bun.gc(true);
  console.log(JSON.stringify({ peak, afterFull, afterBunGc: rssMb(), held: held.length }));
} else {
  const delays = (process.argv[2] ?? "10,1000,10000,-1").split(",");
  console.log("| MIMALLOC_PURGE_DELAY | peak RSS | after fullGC() | after Bun.gc(true) |");
  console.log("|---:|---:|---:|---:|");
  for (const delay of delays) {
    const child = Bun.spawnSync([process.execPath, "--smol", import.meta.path], {
      env: { ...process.env, PURGE_PROBE_CHILD: "1", MIMALLOC_PURGE_DELAY: delay },
    });
    const r = JSON.parse(child.stdout.toString().trim()) as { peak: number; afterFull: number; afterBunGc: number };
    console.log(
      `| ${delay} | ${r.peak.toFixed(0)} MB | ${r.afterFull.toFixed(0)} MB | ${r.afterBunGc.toFixed(0)} MB |`,
    );
  }
}

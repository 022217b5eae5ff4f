/**
 * Where the memory scenario's RSS lies: `npx bun bench/memory-breakdown.ts [subjects]` (default
 * 1,000,000). Runs the memory scenario's server and load (bench/memory.ts), then prints, once the
 * server has gone quiet and again 10, 30 and 60 s later: RSS split into anonymous and file-backed
 * pages, the JS heap's size and use (prom-client's `nodejs_heap_size_*` from /metrics), and the
 * largest anonymous mappings (/proc/<pid>/smaps). Not part of `npm run bench`.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMemory } from "./memory";
import { cleanupAll, rssMb } from "./proc";
import { startDecideServer } from "./server";
import { issueKeys, setupSite, signArticles } from "./workload";

const subjects = Number(process.argv[2] ?? 1_000_000);

/** The anonymous mappings with the most resident KB: [KB, size in MB, range]. */
function largestAnon(pid: number, top = 6): string[] {
  const found: [number, number, string][] = [];
  let range = "";
  let anon = false;
  let size = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      range = `${head[1]}-${head[2]}`;
      anon = (head[3] ?? "") === "" || (head[3] ?? "").startsWith("[anon");
      size = (Number.parseInt(head[2] as string, 16) - Number.parseInt(head[1] as string, 16)) / 1048576;
    } else if (line.startsWith("Rss:") && anon) {
      found.push([Number(line.split(/\s+/)[1]), size, range]);
    }
  }
  return found
    .sort((a, b) => b[0] - a[0])
    .slice(0, top)
    .map(([kb, mb, r]) => `${(kb / 1024).toFixed(1)} MB resident of ${mb.toFixed(0)} MB (${r})`);
}

async function heap(url: string, token: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  const out: Record<string, number> = {};
  for (const name of ["nodejs_heap_size_total_bytes", "nodejs_heap_size_used_bytes", "process_resident_memory_bytes"]) {
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    out[name] = Math.round(Number(line?.split(" ")[1]) / 1048576);
  }
  return out;
}

const work = mkdtempSync(join(tmpdir(), "memory-breakdown-"));
// DATABASE_URL: the server store (a fresh database on that server), to see the embedded store's share.
const server = await startDecideServer({ label: "memory-breakdown", databaseUrl: process.env.DATABASE_URL });
try {
  const optional = await setupSite(server, work);
  const keys = await issueKeys(server, 200, "memory");
  const result = await runMemory({
    server,
    keys,
    articles: signArticles(5_000, Date.now()),
    optional,
    subjects,
    timeLimitS: 600,
    settleLimitS: 180,
  });
  console.log(
    `touched ${result.subjects_touched} subjects: RSS ${result.rss_mb} MB settled (baseline ${result.rss_mb_baseline}, peak ${result.rss_mb_peak})`,
  );
  const token = server.env.SVC_OPERATOR_TOKEN as string;
  let after = 0;
  for (const gap of [0, 10, 20, 30]) {
    await Bun.sleep(gap * 1000);
    after += gap;
    console.log(
      `+${after} s: RssAnon ${rssMb(server.pid, "RssAnon").toFixed(1)} MB, RssFile ${rssMb(server.pid, "RssFile").toFixed(1)} MB,`,
      JSON.stringify(await heap(server.url, token)),
    );
  }
  for (const line of largestAnon(server.pid)) console.log(`  ${line}`);
} finally {
  await server.stop();
  await cleanupAll();
}
// Leave when done, as the other scripts here do: something of the load kept this process running
// after its report (seen 2026-11-29).
process.exit(0);

// `bun scripts/test-times.ts`: runs every test file of `npm test` on its own (`bun test <file>`,
// one after another, the embedded store only unless --server) and reports the wall time of each,
// slowest first, as the table in docs/architecture.md "Test tiers". Each file's time includes its
// process start and its databases, which is what the file costs in a run of its own. Results are
// written as JSON lines to --out as they come (default /tmp/svc-test-times.jsonl); --table FILE...
// prints the table again from such files (a file measured twice counts by its last run). `--shard K/N` measures every N-th file (from the K-th),
// so N runs can share a machine whose load comes from elsewhere; `--skip FILE` leaves out the
// files a run already measured.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { testFiles } from "./test-fast";

interface FileTime {
  file: string;
  seconds: number;
  pass: number;
  fail: number;
  exitCode: number;
}

const root = join(import.meta.dir, "..");

function table(times: FileTime[], top: number): string {
  const sorted = [...times].sort((a, b) => b.seconds - a.seconds);
  const total = times.reduce((sum, t) => sum + t.seconds, 0);
  const lines = ["| file | seconds | tests |", "|---|---:|---:|"];
  for (const t of sorted.slice(0, top))
    lines.push(`| \`${t.file}\` | ${t.seconds.toFixed(1)} | ${t.pass}${t.fail > 0 ? ` (${t.fail} failed)` : ""} |`);
  const failed = times.filter((t) => t.exitCode !== 0).length;
  lines.push(
    "",
    `${times.length} files, ${total.toFixed(0)} s in all (one after another), ${failed} with a failure; the slowest ${top} took ${sorted
      .slice(0, top)
      .reduce((sum, t) => sum + t.seconds, 0)
      .toFixed(0)} s.`,
  );
  return lines.join("\n");
}

/** The times a run wrote (JSON lines). */
function read(path: string): FileTime[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as FileTime);
}

function counted(output: string, word: "pass" | "fail"): number {
  const match = output.match(new RegExp(`^\\s*(\\d+) ${word}$`, "m"));
  return match ? Number(match[1]) : 0;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    options: {
      out: { type: "string", default: "/tmp/svc-test-times.jsonl" },
      table: { type: "string" },
      top: { type: "string", default: "15" },
      server: { type: "boolean", default: false },
      shard: { type: "string", default: "1/1" },
      skip: { type: "string" },
    },
    allowPositionals: true,
  });
  const top = Number(values.top);
  if (values.table !== undefined) {
    // A file measured again (a rerun with --skip) counts by its last measurement.
    const last = new Map([values.table, ...positionals].flatMap(read).map((t) => [t.file, t]));
    const times = [...last.values()];
    console.log(table(times, top));
    process.exit(0);
  }
  const env = { ...process.env };
  if (!values.server) delete env.DATABASE_URL;
  const out = values.out as string;
  writeFileSync(out, "");
  const [k, n] = (values.shard as string).split("/").map(Number) as [number, number];
  const measured = new Set(values.skip === undefined ? [] : read(values.skip).map((t) => t.file));
  const files = testFiles(join(root, "test"))
    .map((f) => `./${relative(root, f)}`)
    .sort()
    .filter((f) => !measured.has(f))
    .filter((_, i) => i % n === k - 1);
  const times: FileTime[] = [];
  console.log(
    `${new Date().toISOString()}: ${files.length} files, ${values.server ? "with" : "without"} a server store`,
  );
  for (const file of files) {
    const started = performance.now();
    const run = Bun.spawnSync([process.execPath, "test", "--timeout", "30000", file], {
      cwd: root,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = `${run.stdout.toString()}\n${run.stderr.toString()}`;
    const time: FileTime = {
      file,
      seconds: (performance.now() - started) / 1000,
      pass: counted(output, "pass"),
      fail: counted(output, "fail"),
      exitCode: run.exitCode ?? 1,
    };
    times.push(time);
    appendFileSync(out, `${JSON.stringify(time)}\n`);
    console.log(`${time.seconds.toFixed(1).padStart(7)} s  ${time.pass} pass ${time.fail} fail  ${file}`);
  }
  console.log(`${new Date().toISOString()}: done\n`);
  console.log(table(times, top));
}

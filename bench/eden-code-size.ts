/**
 * How long JavaScriptCore's young (eden) collections stop a process as a function of the code it
 * holds: `npx bun bench/eden-code-size.ts` (add `taskset -c 0` in front for one core, as the pinned
 * bench's server has). Runs itself once per configuration, each under `--smol` with
 * `BUN_JSC_logGC=true`:
 *
 * - `none`: no extra code;
 * - `loaded <n>`: n distinct functions created, never called;
 * - `run <n>`: n distinct functions, each called 600 times (compiled by the baseline JIT);
 * - `svc modules`: svc's own modules imported (src/app.ts and src/deps.ts), nothing started;
 * - `import <a,b,...>`: the named packages imported, nothing run (only with `EDEN_CONFIGS`, a JSON
 *   list of configurations to run instead of the four above, e.g. `'["none","import nodemailer"]'`).
 *
 * Then each holds 100,000 small objects and for `SECONDS` (default 8) allocates about 3 KB five
 * times a millisecond, as a server at 5,000 req/s does, and prints the eden collections made
 * meanwhile with every stop of the world (bench/gc-log.ts), and how many functions it held when it
 * began (JavaScriptCore's `FunctionExecutable` cells, from `bun:jsc`'s `heapStats`).
 */
import { heapStats } from "bun:jsc";
import { join } from "node:path";
import { collectionsIn } from "./gc-log";

const MARK = "=====measure";
const HELD = "=====functions ";
const seconds = Number(process.env.SECONDS ?? 8);

if (process.env.EDEN_CODE_CONFIG !== undefined) {
  const [kind, count] = process.env.EDEN_CODE_CONFIG.split(" ") as [string, string | undefined];
  const n = kind === "import" ? 0 : Number(count ?? 0);
  const fns: ((x: number) => number)[] = [];
  for (let i = 0; i < n; i++) {
    // Distinct source text, so that each is its own executable and code block.
    fns.push(
      new Function("x", `const o = { k${i % 50}: x + ${i}, v: [x, ${i}] }; return o.v[1] + o.k${i % 50};`) as (
        x: number,
      ) => number,
    );
  }
  if (kind === "run") for (let r = 0; r < 600; r++) for (const f of fns) f(r);
  if (kind === "import") for (const name of (count ?? "").split(",")) await import(name);
  if (kind === "svc") {
    await import(join(import.meta.dir, "../src/app.ts"));
    await import(join(import.meta.dir, "../src/deps.ts"));
  }
  const kept: { i: number; s: string }[] = [];
  for (let i = 0; i < 100_000; i++) kept.push({ i, s: `k${i}` });
  Bun.gc(true);
  // The functions this process holds (JavaScriptCore's executables of created functions).
  const held = (heapStats().objectTypeCounts as Record<string, number>).FunctionExecutable ?? 0;
  console.error(`${HELD}${held}`);
  console.error(MARK);
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  while (Date.now() < end) {
    for (let k = 0; k < 5; k++) {
      const request = { a: [1, 2, 3], b: `${"x".repeat(100)}${k}`, c: new Array(50).fill(k) };
      sink += JSON.stringify(request).length;
    }
    await Bun.sleep(1);
  }
  console.error(MARK, sink, kept.length, fns.length);
  process.exit(0);
}

const configs: [string, string][] = process.env.EDEN_CONFIGS
  ? (JSON.parse(process.env.EDEN_CONFIGS) as string[]).map((c) => [c, c])
  : [
      ["none", "none"],
      ["loaded 10000", "10,000 functions, never called"],
      ["run 10000", "10,000 functions, each run"],
      ["svc", "svc's modules imported"],
    ];
console.log(`eden collections over ${seconds} s of allocation (--smol):`);
for (const [config, label] of configs) {
  const child = Bun.spawnSync([process.execPath, "--smol", import.meta.path], {
    env: { ...process.env, EDEN_CODE_CONFIG: config, BUN_JSC_logGC: "true" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = child.stderr.toString();
  const window = output.slice(output.indexOf(MARK), output.lastIndexOf(MARK));
  const eden = collectionsIn(window).filter((c) => c.kind === "EdenCollection");
  const cycles = eden.reduce((a, c) => a + c.cycles, 0);
  const pauses = eden.flatMap((c) => c.pauses);
  const stopped = pauses.reduce((a, b) => a + b, 0);
  const held = output.match(new RegExp(`${HELD}(\\d+)`))?.[1] ?? "?";
  console.log(
    `  ${label} (${held} functions held): ${cycles} collections, ${pauses.length} stops, ${(stopped / Math.max(1, cycles)).toFixed(2)} ms stopped per collection`,
  );
}

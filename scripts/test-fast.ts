// `npm run test:fast`: the tests that need no Postgres, no server process and no browser, picked
// from the tree by what they (and the test helpers they import) use, so a new test joins the tier
// by needing none of them; store contract suites join it on their in-memory twins
// (SVC_TEST_FAST=1). The full `npm test` stays what CI runs.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = join(import.meta.dir, "..");
/** What makes a test slow: a database, the app's harness, a spawned process, a browser. */
const slow =
  /helpers\/(databases|harness|browser|process|second-process|threads)|freshDatabase|startHarness|openDatabase|createDeps|Bun\.spawn|\bspawn\(|PGlite|pglite/;

/** Every test file under `dir`, recursively. */
export function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** Whether a test file, or a test helper it imports (followed within test/), needs what is slow. */
function needsSlow(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  // Type-only imports cost nothing at run time.
  const text = readFileSync(file, "utf8").replace(/^import type [^;]*;/gm, "");
  if (slow.test(text)) return true;
  for (const [, spec] of text.matchAll(/^(?:import|export) (?!type )[^;]*?from "(\.\.?\/[^"]+)"/gm)) {
    const target = resolve(dirname(file), `${spec}.ts`);
    // The contract harness opens databases only outside the fast tier.
    if (target.endsWith("/helpers/store-contract.ts")) continue;
    if (target.startsWith(join(root, "test")) && existsSync(target) && needsSlow(target, seen)) return true;
  }
  return false;
}

export function fastTestFiles(): string[] {
  return testFiles(join(root, "test"))
    .filter((file) => !needsSlow(file))
    .map((file) => `./${relative(root, file)}`)
    .sort();
}

/**
 * Runs `files` with `bun test` in this environment plus `env`, and exits with its code; with
 * `--list` on the command line, prints them instead.
 */
export function runTestFiles(files: readonly string[], env: Record<string, string>, timeoutMs: number): never {
  if (process.argv.includes("--list")) {
    for (const file of files) console.log(file);
    process.exit(0);
  }
  const run = Bun.spawnSync([process.execPath, "test", "--timeout", String(timeoutMs), ...files], {
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
    env: { ...process.env, ...env },
  });
  process.exit(run.exitCode ?? 1);
}

if (import.meta.main) {
  // Store contract suites run on the in-memory twins only (test/helpers/store-contract.ts).
  runTestFiles(fastTestFiles(), { SVC_TEST_FAST: "1" }, 30_000);
}

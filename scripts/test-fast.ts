// `npm run test:fast`: the tests that need no Postgres, no server process and no browser, picked
// from the tree by what they import, so a new test joins the tier by needing none of them; store
// contract suites join it on their in-memory twins (SVC_TEST_FAST=1). The full `npm test` stays
// what CI runs.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

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

export function fastTestFiles(): string[] {
  return testFiles(join(root, "test"))
    .filter((file) => !slow.test(readFileSync(file, "utf8")))
    .map((file) => `./${relative(root, file)}`)
    .sort();
}

if (import.meta.main) {
  const files = fastTestFiles();
  if (process.argv.includes("--list")) {
    for (const file of files) console.log(file);
    process.exit(0);
  }
  const run = Bun.spawnSync([process.execPath, "test", "--timeout", "30000", ...files], {
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
    // Store contract suites run on the in-memory twins only (test/helpers/store-contract.ts).
    env: { ...process.env, SVC_TEST_FAST: "1" },
  });
  process.exit(run.exitCode ?? 1);
}

// `npm run test:thread`: every test that starts the server as a process (`startServerProcess`,
// `twoServerProcesses`) run again with the decide thread on (SVC_TEST_DECIDE_THREAD=on makes
// test/helpers/process.ts start each with SVC_DECIDE_THREAD=on; docs/decide-thread.md), so the
// thread mode answers what the one-thread server answers. Tests that set SVC_DECIDE_THREAD
// themselves already run both. CI runs it after `npm test`.

import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { runTestFiles, testFiles } from "./test-fast";

const root = join(import.meta.dir, "..");

export function threadTestFiles(): string[] {
  return testFiles(join(root, "test"))
    .filter((file) => {
      const text = readFileSync(file, "utf8");
      return /startServerProcess\(|twoServerProcesses\(/.test(text) && !text.includes("SVC_DECIDE_THREAD");
    })
    .map((file) => `./${relative(root, file)}`)
    .sort();
}

if (import.meta.main) runTestFiles(threadTestFiles(), { SVC_TEST_DECIDE_THREAD: "on" }, 60_000);

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Temporary folders the tests create (data folders of servers and harnesses, embedded Postgres
 * among them: tens of MB each). test/preload.ts removes them once every test file has run.
 */
const created: string[] = [];

export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/** Removes every folder scratchDir made (a test still holding one has finished by now). */
export function removeScratchDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

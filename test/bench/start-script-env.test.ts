import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startScriptEnv } from "../../bench/server";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A checkout holding only a package.json whose start script is `start`. */
function rootWith(start: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), "start-env-"));
  dirs.push(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ scripts: start === undefined ? {} : { start } }));
  return dir;
}

describe("bench: the environment npm start sets", () => {
  it("runs this checkout's server with the allocator setting its start script gives", () => {
    expect(startScriptEnv(ROOT)).toEqual({ MIMALLOC_PURGE_DELAY: "10000" });
  });

  it("reads leading assignments, a shell default as its default, and stops at the command", () => {
    // The shell's `${C:-two}`, written with `$` and `{` apart so it reads as no template here.
    const start = `A_B=1 C=$${"{"}C:-two} BUN_JSC_useX=0 bun --smol src/main.ts D=3`;
    expect(startScriptEnv(rootWith(start))).toEqual({ A_B: "1", C: "two", BUN_JSC_useX: "0" });
  });

  it("gives nothing for a start script without assignments (an earlier commit's) or none at all", () => {
    expect(startScriptEnv(rootWith("bun --smol src/main.ts"))).toEqual({});
    expect(startScriptEnv(rootWith(undefined))).toEqual({});
  });
});

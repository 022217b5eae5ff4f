import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensurePackage } from "../../bench/proc";

/**
 * ensurePackage runs Debian's apt-get. These tests put a stand-in `apt-get` first on PATH: a
 * shell script that logs its arguments and, depending on FAKE_APT_MODE, installs the command (an
 * executable in the same folder), installs it only after an `update`, or always fails the way
 * apt-get does (exit 100, the reason on stderr).
 */
const FAKE_APT = `#!/bin/sh
echo "$*" >> "$FAKE_APT_LOG"
case "$1" in
  update) touch "$FAKE_APT_DIR/updated"; exit 0 ;;
  install)
    if [ "$FAKE_APT_MODE" = ok ] || { [ "$FAKE_APT_MODE" = after-update ] && [ -f "$FAKE_APT_DIR/updated" ]; }; then
      printf '#!/bin/sh\\nexit 0\\n' > "$FAKE_APT_DIR/$FAKE_APT_PROVIDES"
      chmod +x "$FAKE_APT_DIR/$FAKE_APT_PROVIDES"
      exit 0
    fi
    echo "E: Unable to locate package $4" >&2
    exit 100 ;;
esac
exit 1
`;

const TOOL = "svc-bench-fake-tool";
const saved = { ...process.env };
let dir = "";
let log = "";

function calls(): string[] {
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-fake-apt-"));
  log = join(dir, "calls.log");
  const aptGet = join(dir, "apt-get");
  writeFileSync(aptGet, FAKE_APT);
  chmodSync(aptGet, 0o755);
  process.env.PATH = `${dir}:${saved.PATH ?? ""}`;
  process.env.FAKE_APT_DIR = dir;
  process.env.FAKE_APT_LOG = log;
  process.env.FAKE_APT_PROVIDES = TOOL;
});

afterEach(() => {
  for (const k of ["PATH", "FAKE_APT_DIR", "FAKE_APT_LOG", "FAKE_APT_PROVIDES", "FAKE_APT_MODE"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("bench: ensurePackage (installs a missing tool with apt-get)", () => {
  test("does nothing when the command is already on PATH", async () => {
    process.env.FAKE_APT_MODE = "ok";
    await ensurePackage("sh", "dash");
    expect(calls()).toEqual([]);
  });

  test("installs the package when the command is missing, without updating first", async () => {
    process.env.FAKE_APT_MODE = "ok";
    expect(Bun.which(TOOL, { PATH: process.env.PATH ?? "" })).toBeNull();
    await ensurePackage(TOOL, "fake-pkg");
    expect(calls()).toEqual(["install -y -qq fake-pkg"]);
    expect(Bun.which(TOOL, { PATH: process.env.PATH ?? "" })).toBe(join(dir, TOOL));
  });

  test("updates the package lists and tries again when the first install fails", async () => {
    process.env.FAKE_APT_MODE = "after-update";
    await ensurePackage(TOOL, "fake-pkg");
    expect(calls()).toEqual(["install -y -qq fake-pkg", "update -qq", "install -y -qq fake-pkg"]);
    expect(Bun.which(TOOL, { PATH: process.env.PATH ?? "" })).toBe(join(dir, TOOL));
  });

  test("fails with apt-get's reason when the package cannot be installed", async () => {
    process.env.FAKE_APT_MODE = "fail";
    await expect(ensurePackage(TOOL, "fake-pkg")).rejects.toThrow(
      "could not install fake-pkg: E: Unable to locate package fake-pkg",
    );
    expect(calls()).toEqual(["install -y -qq fake-pkg", "update -qq", "install -y -qq fake-pkg"]);
  });

  test("fails when the install succeeds but the command is still missing", async () => {
    process.env.FAKE_APT_MODE = "ok";
    process.env.FAKE_APT_PROVIDES = "something-else";
    await expect(ensurePackage(TOOL, "fake-pkg")).rejects.toThrow("could not install fake-pkg");
  });
});

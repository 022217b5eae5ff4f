import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/process";

const script = join(import.meta.dir, "..", "..", "bench", "alternate-pinned.sh");

function git(cwd: string, ...args: string[]): string {
  const run = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", ...args], { cwd });
  if (run.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${run.stderr.toString()}`);
  return run.stdout.toString().trim();
}

describe("bench/alternate-pinned.sh", () => {
  test("names two checkouts of one commit apart, keeps each one's log, and reverses every other round", () => {
    const root = tempDir();
    const base = join(root, "base");
    mkdirSync(base);
    git(base, "init", "-q");
    writeFileSync(join(base, "code.ts"), "export const a = 1;\n");
    git(base, "add", ".");
    git(base, "commit", "-qm", "one");
    const changed = join(root, "changed");
    git(base, "worktree", "add", "-q", changed);
    // The change under test, not yet committed: same commit as base.
    writeFileSync(join(changed, "code.ts"), "export const a = 2;\n");
    const commit = git(base, "rev-parse", "--short", "HEAD");

    // A stand-in for the bench: a svc row naming the folder it ran in and the code it found.
    const stand = `echo "| svc (SVC_HTTP_SERVER=h1) | $(basename "$PWD") $(cat code.ts | tr -d ' ;\\n') |"; echo "| bare Bun.serve (ceiling) | 1000 |"`;
    const run = Bun.spawnSync(["bash", script, "2", base, changed], {
      env: { ...process.env, ALTERNATE_PINNED_RUN: stand },
    });
    expect(run.exitCode).toBe(0);
    const rows = run.stdout
      .toString()
      .split("\n")
      .filter((l) => l.includes(" round "));
    expect(rows).toHaveLength(4);
    const [first, second, third, fourth] = rows.map((l) => l.replace(/\s+/g, " "));
    // Round 1 in the order given, round 2 reversed; each row its own checkout's.
    expect(first).toStartWith(`base@${commit} round 1: | svc (SVC_HTTP_SERVER=h1) | base exportconsta=1 |`);
    expect(second).toStartWith(`changed@${commit}+ round 1: | svc (SVC_HTTP_SERVER=h1) | changed exportconsta=2 |`);
    expect(third).toStartWith(`changed@${commit}+ round 2:`);
    expect(fourth).toStartWith(`base@${commit} round 2:`);
    for (const row of rows) expect(row).toEndWith("ceiling 1000");
    // One log per checkout and round: none overwrote another.
    const logs = run.stdout.toString().match(/logs: (.+)/)?.[1] as string;
    expect(Bun.spawnSync(["ls", logs]).stdout.toString().trim().split("\n")).toHaveLength(4);
  });

  test("refuses to run without a checkout", () => {
    const run = Bun.spawnSync(["bash", script, "2"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.toString()).toContain("usage: bench/alternate-pinned.sh ROUNDS DIR");
  });
});

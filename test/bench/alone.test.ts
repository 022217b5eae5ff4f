/** Each server measured alone on the server's core (bench/alone.ts): the others stopped, then resumed. */
import { afterEach, describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { CoreShare } from "../../bench/alone";

/** A process' state letter from /proc (`T`: stopped by a signal; `S`: sleeping). */
function state(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

/** The states of `pids` once they read `expected` (a signal is acted on by its process, not at once), or after 2 s. */
async function states(pids: readonly number[], expected: readonly string[]): Promise<string[]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const now = pids.map(state);
    if (now.join() === expected.join() || Date.now() > deadline) return now;
    await Bun.sleep(5);
  }
}

const children: Bun.Subprocess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    child.kill("SIGCONT");
    child.kill();
  }
});

const sleeper = () => {
  const child = Bun.spawn(["sleep", "60"], { stdout: "ignore" });
  children.push(child);
  return child.pid;
};

describe.skipIf(process.platform !== "linux")("servers measured alone", () => {
  it("stops every other server while one is measured, and resumes each for its own turn", async () => {
    const [a, b, c] = [sleeper(), sleeper(), sleeper()];
    const share = new CoreShare([a, b, c]);
    await share.alone(a, 0);
    expect(await states([a, b, c], ["S", "T", "T"])).toEqual(["S", "T", "T"]);
    await share.alone(b, 10);
    expect(await states([a, b, c], ["T", "S", "T"])).toEqual(["T", "S", "T"]);
    share.resumeAll();
    expect(await states([a, b, c], ["S", "S", "S"])).toEqual(["S", "S", "S"]);
  });

  it("goes on when a server has already exited", async () => {
    const a = sleeper();
    const gone = Bun.spawn(["true"]);
    await gone.exited;
    const share = new CoreShare([a, gone.pid]);
    await share.alone(a, 0);
    expect(await states([a], ["S"])).toEqual(["S"]);
    share.resumeAll();
  });
});

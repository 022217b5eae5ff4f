import { describe, expect, it } from "bun:test";
import { YIELDING_THREADS } from "../../src/runtime/background-threads";
import { runBun, startServerProcess, tempDir } from "../helpers/process";
import { type ThreadPolicy, threadPolicies } from "../helpers/threads";

const SCHED_IDLE = 5;
const NORMAL = 0;
const linux = process.platform === "linux";

/** Waits until every runtime thread of the server is idle-class (threads start lazily; rescans every 5 s). */
async function settledPolicies(pid: number, limitMs: number): Promise<ThreadPolicy[]> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const threads = threadPolicies(pid);
    const runtime = threads.filter((t) => YIELDING_THREADS.test(t.name));
    if ((runtime.length > 0 && runtime.every((t) => t.policy === SCHED_IDLE)) || Date.now() > deadline) return threads;
    await Bun.sleep(200);
  }
}

describe.skipIf(!linux)("runtime background threads", () => {
  it("are idle-class in a server process; the request thread and the others keep their policy", async () => {
    const server = await startServerProcess({ SVC_DATA_DIR: tempDir(), SVC_SEED_DEMO: "0" });
    try {
      const threads = await settledPolicies(server.pid, 12_000);
      const runtime = threads.filter((t) => YIELDING_THREADS.test(t.name));
      expect(runtime.map((t) => t.name)).toContain("mi-scavenger");
      expect(runtime.map((t) => t.name)).toContain("JITWorker");
      for (const t of runtime) expect({ ...t, policy: t.policy }).toEqual({ ...t, policy: SCHED_IDLE });
      const main = threads.find((t) => t.tid === server.pid);
      expect(main?.policy).toBe(NORMAL);
      // The database thread (nice 10 of its own) and Bun's pool are not lowered.
      const others = threads.filter((t) => !YIELDING_THREADS.test(t.name));
      expect(others.map((t) => t.name)).toContain("Worker");
      for (const t of others) expect(t.policy).toBe(NORMAL);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it("keep their policy with SVC_RUNTIME_THREADS=normal", async () => {
    const server = await startServerProcess({
      SVC_DATA_DIR: tempDir(),
      SVC_SEED_DEMO: "0",
      SVC_RUNTIME_THREADS: "normal",
    });
    try {
      await Bun.sleep(500);
      const threads = threadPolicies(server.pid);
      expect(threads.some((t) => YIELDING_THREADS.test(t.name))).toBe(true);
      for (const t of threads) expect(t.policy).toBe(NORMAL);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it("lowers a thread that starts after the first look, once it looks again", async () => {
    const { code, stdout: out, stderr: err } = await runBun(["test/fixtures/background-threads-child.ts"]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const seen = JSON.parse(out) as {
      pid: number;
      loweredAtStart: number;
      lowered: [number, string][];
      beforeScan: ThreadPolicy[];
      afterScan: ThreadPolicy[];
    };
    expect(seen.loweredAtStart).toBe(0);
    // Bun may run more than one thread by that name, some short-lived: every one alive is lowered.
    const before = seen.beforeScan.filter((t) => t.name === "Worker");
    expect(before.length).toBeGreaterThan(0);
    for (const t of before) expect(t.policy).toBe(NORMAL);
    const after = seen.afterScan.filter((t) => t.name === "Worker");
    expect(after.length).toBeGreaterThan(0);
    for (const t of after) expect(t.policy).toBe(SCHED_IDLE);
    const lowered = new Set(seen.lowered.map(([tid]) => tid));
    for (const t of after) expect(lowered.has(t.tid)).toBe(true);
    expect(seen.lowered.every(([, name]) => name === "Worker")).toBe(true);
    // Nothing else changed: not the main thread, not the runtime's threads (another pattern here).
    // Only threads that were there before the look count: a thread a lowered Worker starts
    // afterwards (its own collector helpers) inherits its policy from it, as Linux does.
    const existed = new Set(seen.beforeScan.map((t) => t.tid));
    const others = seen.afterScan.filter((x) => x.name !== "Worker" && existed.has(x.tid));
    expect(others.length).toBeGreaterThan(0);
    for (const t of others) expect(t.policy).toBe(NORMAL);
  }, 30_000);
});

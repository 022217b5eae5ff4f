import { describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { type SetScheduler, YIELDING_THREADS, yieldBackgroundThreads } from "../../src/runtime/background-threads";
import { memoryLogger } from "../helpers/harness";
import { runBun, startServerProcess, tempDir } from "../helpers/process";
import { type ThreadPolicy, threadPolicies } from "../helpers/threads";
import { until } from "../helpers/wait";

const SCHED_IDLE = 5;
const NORMAL = 0;
const linux = process.platform === "linux";

/** Waits until every runtime thread of the server is idle-class (threads start lazily; rescans every 5 s). */
async function settledPolicies(pid: number, limitMs: number): Promise<ThreadPolicy[]> {
  const settled = () => {
    const runtime = threadPolicies(pid).filter((t) => YIELDING_THREADS.test(t.name));
    return runtime.length > 0 && runtime.every((t) => t.policy === SCHED_IDLE);
  };
  await until(settled, limitMs, 200);
  return threadPolicies(pid);
}

describe.skipIf(!linux)("runtime background threads", () => {
  it("are idle-class in a server process with SVC_RUNTIME_THREADS=idle; the request thread and the others keep their policy", async () => {
    const server = await startServerProcess({
      SVC_DATA_DIR: tempDir(),
      SVC_SEED_DEMO: "0",
      SVC_RUNTIME_THREADS: "idle",
      // One thread's server: its only "Worker" is the embedded store's (the decide thread is one too).
      SVC_DECIDE_THREAD: "off",
    });
    try {
      const threads = await settledPolicies(server.pid, 12_000);
      const runtime = threads.filter((t) => YIELDING_THREADS.test(t.name));
      expect(runtime.map((t) => t.name)).toContain("mi-scavenger");
      expect(runtime.map((t) => t.name)).toContain("JITWorker");
      for (const t of runtime) expect({ ...t, policy: t.policy }).toEqual({ ...t, policy: SCHED_IDLE });
      const main = threads.find((t) => t.tid === server.pid);
      expect(main?.policy).toBe(NORMAL);
      // The embedded store's thread moves itself to the idle class too (db/pglite-worker.ts), not
      // by this module; Bun's pool keeps the process' policy.
      const store = threads.filter((t) => t.name === "Worker");
      expect(store.length).toBe(1);
      expect(store[0]?.policy).toBe(SCHED_IDLE);
      const others = threads.filter((t) => !YIELDING_THREADS.test(t.name) && t.name !== "Worker");
      for (const t of others) expect(t.policy).toBe(NORMAL);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it("keep their policy by default (SVC_RUNTIME_THREADS=normal)", async () => {
    const server = await startServerProcess({ SVC_DATA_DIR: tempDir(), SVC_SEED_DEMO: "0", SVC_DECIDE_THREAD: "off" });
    try {
      // Threads start lazily: wait until the runtime's are there to be looked at.
      await until(() => threadPolicies(server.pid).some((t) => YIELDING_THREADS.test(t.name)), 5_000, 50);
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
    // afterwards (its own collector helpers) inherits its policy from it, as Linux does. A thread
    // the module lowered is judged by its name when lowered (checked above): a thread the Worker
    // has just started carries the Worker's name until it names itself, so it can be lowered as
    // "Worker" and read back as "HeapHelper" (seen in 2 of 40 runs).
    const existed = new Set(seen.beforeScan.map((t) => t.tid));
    const others = seen.afterScan.filter((x) => x.name !== "Worker" && existed.has(x.tid) && !lowered.has(x.tid));
    expect(others.length).toBeGreaterThan(0);
    for (const t of others) expect(t.policy).toBe(NORMAL);
  }, 30_000);
});

/** What a memory logger has kept, parsed. */
const logged = (logger: ReturnType<typeof memoryLogger>) =>
  logger.lines.map(
    (line) => JSON.parse(line) as { level: string; message: string; tid?: number; thread?: string; reason?: string },
  );

// The paths a kernel does not take here (as root, lowering a thread's own policy always works;
// off Linux there is no sched_setscheduler): the call is passed in, and no real thread changes.
const commOf = (tid: number) => {
  try {
    return readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
  } catch {
    return "(ended)";
  }
};
describe("runtime background threads when the policy cannot be set", () => {
  // Every thread of this test process but the main one (Bun always runs a few).
  const anyThread = /./;

  it.skipIf(!linux)("warns once, lowers nothing and does not retry a thread it could not change", () => {
    const tried: number[] = [];
    /** "tid name" of each thread tried: a thread that renamed itself meanwhile is another one. */
    const triedThreads: string[] = [];
    const failing: SetScheduler = (tid) => {
      tried.push(tid);
      triedThreads.push(`${tid} ${commOf(tid)}`);
      return -1;
    };
    const logger = memoryLogger();
    const threads = yieldBackgroundThreads(logger, 60_000, anyThread, failing);
    try {
      expect(tried.length).toBeGreaterThan(1);
      expect(tried).not.toContain(process.pid);
      expect(threads.lowered.size).toBe(0);
      const warnings = logged(logger).filter((l) => l.level === "warn");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.message).toBe("could not lower a runtime thread's priority");
      expect(warnings[0]?.tid).toBe(tried[0]);
      // Looked at again: the threads already tried are not tried again, and no second warning.
      const before = triedThreads.length;
      threads.scan();
      const retried = triedThreads.slice(before).filter((thread) => triedThreads.indexOf(thread) < before);
      expect(retried).toEqual([]);
      expect(logged(logger).filter((l) => l.level === "warn")).toHaveLength(1);
    } finally {
      threads.stop();
    }
  });

  it.skipIf(!linux)("lowers the threads it can when another fails", () => {
    let calls = 0;
    const firstFails: SetScheduler = (tid, policy) => {
      expect(policy).toBe(SCHED_IDLE);
      expect(tid).not.toBe(process.pid);
      return calls++ === 0 ? -1 : 0;
    };
    const logger = memoryLogger();
    const threads = yieldBackgroundThreads(logger, 60_000, anyThread, firstFails);
    try {
      const lines = logged(logger);
      expect(calls).toBeGreaterThan(1);
      expect(threads.lowered.size).toBe(calls - 1);
      expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);
      expect(lines.filter((l) => l.message === "runtime thread yields to requests")).toHaveLength(calls - 1);
    } finally {
      threads.stop();
    }
  });

  it("without sched_setscheduler (not Linux) does nothing and says so once", () => {
    const logger = memoryLogger();
    const threads = yieldBackgroundThreads(logger, 60_000, anyThread, null);
    threads.scan();
    threads.stop();
    expect(threads.lowered.size).toBe(0);
    expect(logged(logger)).toEqual([
      expect.objectContaining({
        level: "info",
        message: "runtime threads keep their priority",
        reason: "no sched_setscheduler on this platform",
      }),
    ]);
  });
});

describe("the runtime threads looked for", () => {
  it("are known by the names Linux shows: JavaScriptCore keeps the last 15 characters of a long one", () => {
    for (const name of ["mi-scavenger", "JITWorker", "JSCWarmUp", "HeapHelper", "t Helper Thread", "ollector Thread"]) {
      expect(YIELDING_THREADS.test(name)).toBe(true);
    }
    for (const name of ["bun.exe", "Worker", "Bun Pool 0", "Heap Helper Thr"])
      expect(YIELDING_THREADS.test(name)).toBe(false);
  });
});

/**
 * The runtime's own background threads yield to the request thread (Linux).
 *
 * Bun starts threads beside the one that answers requests: mimalloc's scavenger (it returns freed
 * memory to the OS every 100 ms, `purge_delay`, for 1–5 ms at a time under load) and
 * JavaScriptCore's JIT compiler, warm-up and heap helper threads. At normal priority the kernel
 * lets such a thread run out its time slice on the request thread's core, often while the other
 * core is idle: in a scheduler trace of 5 s at the bench's spec rate, 19 of 79 stretches of
 * requests over 1 ms were the request thread waiting 1–5.4 ms behind the scavenger (14) or a
 * compiler thread (5) (docs/performance.md).
 *
 * As `SCHED_IDLE` threads they run only when a core has nothing else to do, and a request thread
 * woken behind one takes the core at once. Nothing waits on them for long: the scavenger's
 * returns are only delayed, a compile only lands later, and when the request thread itself waits
 * for one (the collector suspending compiler threads, parallel marking), its core is free for it.
 * The database thread is not one of them (it lowers itself to nice 10: under a long overload an
 * idle-class thread would never write the counters), nor Bun's pool (it runs WebCrypto for the
 * identity routes) or HTTP client threads.
 *
 * Threads start lazily (another compiler thread when more code gets hot), so the threads are looked
 * at again every few seconds. A thread is changed once; one seen under another name (a new thread
 * takes its name just after it starts) is looked at again.
 * Lowering a thread's own policy needs no privilege; `SVC_RUNTIME_THREADS=normal` leaves them.
 */
import { dlopen, FFIType } from "bun:ffi";
import { readdirSync, readFileSync } from "node:fs";
import type { Logger } from "../logger";

/** Thread names (`/proc/<pid>/task/<tid>/comm`) of the runtime threads that yield. */
export const YIELDING_THREADS = /^(mi-scavenger|JITWorker|JSCWarmUp|HeapHelper|t Helper Thread|ollector Thread)$/;

/** Linux's `SCHED_IDLE` policy. */
const SCHED_IDLE = 5;
const RESCAN_MS = 5_000;

/** `sched_setscheduler(tid, policy, {0})`: 0 on success, -1 on failure (as libc returns it). */
export type SetScheduler = (tid: number, policy: number) => number;

/** libc's `sched_setscheduler` on Linux; null where there is none. */
function loadSetScheduler(): SetScheduler | null {
  if (process.platform !== "linux") return null;
  try {
    const libc = dlopen("libc.so.6", {
      sched_setscheduler: { args: [FFIType.i32, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    });
    // struct sched_param { int sched_priority = 0 }, passed as the array itself so it stays alive.
    const param = new Int32Array(1);
    return (tid, policy) => libc.symbols.sched_setscheduler(tid, policy, param) as number;
  } catch {
    return null;
  }
}

function threadName(tid: string): string | undefined {
  try {
    return readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
  } catch {
    return undefined; // the thread ended meanwhile
  }
}

export interface BackgroundThreads {
  /** Thread ids lowered so far, with their names. */
  readonly lowered: ReadonlyMap<number, string>;
  /** Looks for new threads now (also done every few seconds until stopped). */
  scan(): void;
  stop(): void;
}

/**
 * Moves the runtime's background threads to `SCHED_IDLE` now and as they appear. On a platform
 * without `sched_setscheduler` it does nothing and says so once; a thread whose policy cannot be
 * changed is left as it is and not tried again, with one warning for the first such thread.
 * `setScheduler` is libc's (tests pass their own to reach the failure and no-platform paths).
 */
export function yieldBackgroundThreads(
  logger: Logger,
  rescanMs = RESCAN_MS,
  names: RegExp = YIELDING_THREADS,
  setScheduler: SetScheduler | null = loadSetScheduler(),
): BackgroundThreads {
  const lowered = new Map<number, string>();
  /** "tid name" of every thread looked at. */
  const seen = new Set<string>();
  let failures = 0;
  const scan = () => {
    if (setScheduler === null) return;
    let tids: string[];
    try {
      tids = readdirSync("/proc/self/task");
    } catch {
      return;
    }
    for (const entry of tids) {
      const tid = Number(entry);
      if (tid === process.pid) continue;
      const name = threadName(entry);
      if (name === undefined || seen.has(`${tid} ${name}`)) continue;
      seen.add(`${tid} ${name}`);
      if (!names.test(name)) continue;
      if (setScheduler(tid, SCHED_IDLE) === 0) {
        lowered.set(tid, name);
        logger.debug("runtime thread yields to requests", { tid, thread: name });
      } else if (failures++ === 0) {
        logger.warn("could not lower a runtime thread's priority", { tid, thread: name });
      }
    }
  };
  if (setScheduler === null) {
    logger.info("runtime threads keep their priority", { reason: "no sched_setscheduler on this platform" });
  }
  scan();
  const timer = setScheduler === null ? undefined : setInterval(scan, rescanMs);
  timer?.unref();
  return {
    lowered,
    scan,
    stop: () => clearInterval(timer),
  };
}

/**
 * Each server measured alone on the server's core, and the harness off it.
 *
 * The pinned bench and bench/tail-variants.ts start every server they compare on CPU 0 and
 * measure them in turn. An idle server is not idle on that core: svc's timers (the counters'
 * flush every 250 ms, the job queue's and outbox's polls, the h1 sweep), its quiet-time
 * collection and the database thread's work run there during another server's window, and a
 * scheduler trace of one window showed the measured thread taken off the core by the other
 * servers' threads and by the bench's own process (bench/HISTORY.md, "Each server alone on its
 * core"). So while one server is measured the others are stopped (`SIGSTOP`, resumed with
 * `SIGCONT` before their own turn), and the harness' own threads run on the load generator's
 * core.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** Stops every server but the one measured; resumes all at the end. */
export class CoreShare {
  private readonly stopped = new Set<number>();
  constructor(private readonly pids: readonly number[]) {}

  /**
   * Resumes `pid` (if stopped), stops every other server, and waits `settleMs` for the resumed
   * server to run the timers that came due while it was stopped.
   */
  async alone(pid: number, settleMs: number): Promise<void> {
    for (const other of this.pids) {
      if (other === pid || this.stopped.has(other)) continue;
      if (signal(other, "SIGSTOP")) this.stopped.add(other);
    }
    const wasStopped = this.stopped.delete(pid);
    if (wasStopped) signal(pid, "SIGCONT");
    if (wasStopped && settleMs > 0) await sleep(settleMs);
  }

  /** Resumes every server this stopped (before stopping them for good, or on an error). */
  resumeAll(): void {
    for (const pid of this.stopped) signal(pid, "SIGCONT");
    this.stopped.clear();
  }
}

/** Sends a signal; false if the process is gone. */
function signal(pid: number, name: "SIGSTOP" | "SIGCONT"): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Moves this process' threads (the harness: its event loop, its collector and JIT threads) to
 * `cpus` (the load generator's), so they do not take the measured server's core. Returns false
 * where `taskset` is missing or refuses.
 */
export function pinHarness(cpus: string): boolean {
  const result = Bun.spawnSync(["taskset", "-a", "-p", "-c", cpus, String(process.pid)], {
    stdout: "ignore",
    stderr: "ignore",
  });
  return result.exitCode === 0;
}

/**
 * Child processes of the bench, and what /proc says about them. Every child is registered so
 * an exit, a signal or an error kills it; nothing is ever killed by name.
 */
import { readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import type { Subprocess } from "bun";
import { round } from "./stats";

/** What the bench needs of a child, whatever its stdio types. */
type Child = Pick<Subprocess, "pid" | "exited" | "exitCode" | "signalCode" | "kill" | "resourceUsage">;

const children = new Set<Child>();
const cleanups: (() => Promise<void> | void)[] = [];

export function track<T extends Child>(child: T): T {
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}

/** Work to run once at exit (e.g. dropping a bench database), after the children are gone. */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

/** Kills every child still running (SIGKILL after `graceMs`) and runs the cleanups, once. */
let cleaning: Promise<void> | null = null;
export function cleanupAll(graceMs = 3_000): Promise<void> {
  cleaning ??= (async () => {
    const running = [...children].filter((c) => c.exitCode === null && c.signalCode === null);
    for (const c of running) c.kill("SIGTERM");
    await Promise.race([Promise.all(running.map((c) => c.exited)), Bun.sleep(graceMs)]);
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch (error) {
        console.error(`cleanup failed: ${String(error)}`);
      }
    }
  })();
  return cleaning;
}

/** Synchronous last resort on process exit: SIGKILL whatever is still running. */
export function killAllSync(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}

/**
 * Installs Debian's `pkg` with apt-get when `command` is not on PATH (the bench runs as root).
 * PATH is read now: `Bun.which` without it searches the PATH the process started with.
 */
export async function ensurePackage(command: string, pkg: string): Promise<void> {
  const onPath = () => Bun.which(command, { PATH: process.env.PATH ?? "" }) !== null;
  if (onPath()) return;
  console.log(`${command} not found: installing it with apt-get (Debian package ${pkg})…`);
  const run = async (cmd: string[]) => {
    const child = track(
      Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }),
    );
    const code = await child.exited;
    return { code, err: await new Response(child.stderr).text() };
  };
  let res = await run(["apt-get", "install", "-y", "-qq", pkg]);
  if (res.code !== 0) {
    await run(["apt-get", "update", "-qq"]);
    res = await run(["apt-get", "install", "-y", "-qq", pkg]);
  }
  if (res.code !== 0 || !onPath()) throw new Error(`could not install ${pkg}: ${res.err.trim()}`);
}

const CLK_TCK = 100;

/** CPU seconds (user + system, all threads) a live process has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`)?.seconds ?? Number.NaN;
}

/**
 * The name and CPU seconds (user + system) of a process or thread from its stat file
 * (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`); undefined once it has gone.
 */
export function statCpuSeconds(path: string): { name: string; seconds: number } | undefined {
  try {
    const stat = readFileSync(path, "latin1");
    // Fields after the command name (which may hold spaces) start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    const seconds = (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
    return { name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), seconds };
  } catch {
    return undefined;
  }
}

/** CPU seconds per thread name (threads of one name summed). */
export function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // A thread that ended between the listing and the read is left out.
    const thread = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
    if (thread !== undefined) out.set(thread.name, (out.get(thread.name) ?? 0) + thread.seconds);
  }
  return out;
}

/** Resident memory of a live process in MB (VmRSS from /proc/<pid>/status; VmHWM for the peak). */
export function rssMb(pid: number, field: "VmRSS" | "VmHWM" | "RssAnon" | "RssFile" = "VmRSS"): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const match = status.match(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m"));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds a finished child used (from its rusage), or NaN. */
export function childCpuSeconds(child: Child): number {
  const usage = child.resourceUsage();
  if (!usage) return Number.NaN;
  return Number(usage.cpuTime.total) / 1e6;
}

/** A CPU-time meter for this process: cores used (CPU seconds per wall second) since `start`. */
export function selfCpu(): { stop: () => { cpu_s: number; wall_s: number; cores: number } } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  return {
    stop() {
      const c = process.cpuUsage(c0);
      const wall = (performance.now() - t0) / 1000;
      const cpu = (c.user + c.system) / 1e6;
      return { cpu_s: cpu, wall_s: wall, cores: cpu / wall };
    },
  };
}

/** A CPU-time meter for another live process, from /proc. */
export function procCpu(pid: number): { stop: () => { cpu_s: number; wall_s: number; cores: number } } {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  return {
    stop() {
      const cpu = cpuSeconds(pid) - c0;
      const wall = (performance.now() - t0) / 1000;
      return { cpu_s: cpu, wall_s: wall, cores: cpu / wall };
    },
  };
}

function systemTimes(): { idle: number; irq: number; steal: number; total: number } {
  // user nice system idle iowait irq softirq steal
  const cpu = readFileSync("/proc/stat", "latin1").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  return {
    idle: (cpu[3] ?? 0) + (cpu[4] ?? 0),
    irq: (cpu[5] ?? 0) + (cpu[6] ?? 0),
    steal: cpu[7] ?? 0,
    total: cpu.slice(0, 8).reduce((a, b) => a + b, 0),
  };
}

export interface SystemUsage {
  /** Busy cores machine-wide, interrupts included. */
  busy: number;
  /** Cores spent in hard and soft interrupts (loopback networking), charged to no process. */
  irq: number;
  /**
   * Cores the hypervisor gave to other guests while ours wanted to run ("steal"). On a shared
   * virtual machine this swings from run to run, and a scenario that saw it ran slower than the
   * machine can.
   */
  steal: number;
}

/** Machine-wide CPU (from /proc/stat) between start and stop: ours and everyone else's. */
export function systemCpu(): { stop: () => SystemUsage } {
  let a: ReturnType<typeof systemTimes> | null = null;
  try {
    a = systemTimes();
  } catch {
    a = null;
  }
  return {
    stop() {
      const none = { busy: Number.NaN, irq: Number.NaN, steal: Number.NaN };
      if (!a) return none;
      const b = systemTimes();
      const total = b.total - a.total;
      if (total <= 0) return none;
      const cores = cpus().length;
      return {
        busy: Math.round((1 - (b.idle - a.idle) / total) * cores * 100) / 100,
        irq: Math.round(((b.irq - a.irq) / total) * cores * 100) / 100,
        steal: Math.round(((b.steal - a.steal) / total) * cores * 100) / 100,
      };
    },
  };
}

/** Cores busy machine-wide over `ms`: other load present before the bench starts. */
export async function busyCores(ms = 1_000): Promise<number> {
  const meter = systemCpu();
  await Bun.sleep(ms);
  return meter.stop().busy;
}

export interface MachineInfo {
  cores: number;
  cpu_model: string;
  mem_total_gb: number;
  kernel: string;
  /** Cores already busy (other processes) in the second before the bench started. */
  busy_cores_before_start?: number;
}

export function machineInfo(): MachineInfo {
  let model = cpus()[0]?.model ?? "unknown";
  let memGb = Number.NaN;
  let kernel = "unknown";
  try {
    const info = readFileSync("/proc/cpuinfo", "latin1").match(/^model name\s*:\s*(.+)$/m);
    if (info?.[1]) model = info[1].trim();
    const mem = readFileSync("/proc/meminfo", "latin1").match(/^MemTotal:\s+(\d+)\s+kB/m);
    if (mem) memGb = Math.round((Number(mem[1]) / 1024 / 1024) * 10) / 10;
    kernel = readFileSync("/proc/sys/kernel/osrelease", "latin1").trim();
  } catch {
    // Not Linux: keep what os.cpus() said.
  }
  return { cores: cpus().length, cpu_model: model, mem_total_gb: memGb, kernel };
}

/**
 * What code ran: HEAD, how many files under src/ and db/ differ from it, and a digest of that
 * diff (the lead edits src/ while benches run; two results compare only when these agree).
 */
export function sourceState(root: string): { head: string; changed_files: number; diff_sha1: string } {
  const git = (args: string[]) => {
    try {
      const out = Bun.spawnSync(["git", "-C", root, ...args], { stdout: "pipe", stderr: "ignore" });
      return out.exitCode === 0 ? out.stdout.toString() : "";
    } catch {
      return "";
    }
  };
  const status = git(["status", "--porcelain", "--", "src", "db"]).trim();
  const diff = git(["diff", "HEAD", "--", "src", "db"]) + status;
  return {
    head: git(["rev-parse", "--short", "HEAD"]).trim() || "unknown",
    changed_files: status === "" ? 0 : status.split("\n").length,
    diff_sha1: new Bun.CryptoHasher("sha1").update(diff).digest("hex").slice(0, 12),
  };
}

/** Runs a command and returns its trimmed stdout (empty on failure). */
export function commandOutput(cmd: string[]): string {
  try {
    const out = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
    return `${out.stdout.toString()}${out.stderr.toString()}`.trim();
  } catch {
    return "";
  }
}

/**
 * Below this many cores over a one-second sample, the server counts as quiet: writing a backlog
 * keeps it near one core, and an idle process with a large heap still uses a few percent.
 */
const QUIET_CORES = 0.2;

/**
 * Waits until a process uses under QUIET_CORES for one second, or `limitS` passes. A process that
 * is gone (or exits meanwhile) is not waited for: it is not quiet, it is not there.
 */
export async function waitUntilQuiet(pid: number, limitS: number): Promise<{ seconds: number; quiet: boolean }> {
  const t0 = performance.now();
  for (;;) {
    const c0 = cpuSeconds(pid);
    if (Number.isNaN(c0)) return { seconds: round((performance.now() - t0) / 1000, 1), quiet: false };
    await Bun.sleep(1_000);
    const seconds = round((performance.now() - t0) / 1000, 1);
    const c1 = cpuSeconds(pid);
    if (Number.isNaN(c1)) return { seconds, quiet: false };
    if (c1 - c0 < QUIET_CORES) return { seconds, quiet: true };
    if (seconds >= limitS) return { seconds, quiet: false };
  }
}

/** RSS falling by less than this in a second counts as steady. */
const STEADY_MB_PER_S = 1;

/**
 * Waits (up to `limitS`) until the process' RSS has fallen by less than 1 MB in each of two
 * seconds in a row: a server that has gone quiet may still be handing memory back (its
 * collections and the allocator's purge run after its CPU falls), and a read before that is done
 * sees garbage, not what the server holds. Growth counts as steady (the wait is for memory coming
 * back, not for a server that grows). `steady` is false at the limit or when the process is gone.
 */
export async function waitUntilRssSteady(
  pid: number,
  limitS: number,
): Promise<{ seconds: number; steady: boolean; rssMb: number }> {
  const t0 = performance.now();
  let last = rssMb(pid);
  let steadySeconds = 0;
  for (;;) {
    const seconds = round((performance.now() - t0) / 1000, 1);
    if (Number.isNaN(last)) return { seconds, steady: false, rssMb: last };
    if (steadySeconds >= 2) return { seconds, steady: true, rssMb: last };
    if (seconds >= limitS) return { seconds, steady: false, rssMb: last };
    await Bun.sleep(1_000);
    const now = rssMb(pid);
    steadySeconds = last - now < STEADY_MB_PER_S ? steadySeconds + 1 : 0;
    last = now;
  }
}

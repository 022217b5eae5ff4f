/**
 * Saturation and ceiling: the same wrk load (closed loop, same connections, same pre-built
 * requests rotating over many keys) against the decide server and against a bare Bun.serve in
 * its own process, so decide's throughput reads as a share of what Bun itself can do here.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { track } from "./proc";
import { ROOT } from "./server";
import { BENCH_SITE } from "./site";
import { round } from "./stats";
import { runWrk, type WrkResult } from "./wrk";

export const WRK_GENERATOR = "wrk (Debian package, closed loop, Lua rotating pre-built requests)";

export interface LoadFiles {
  keysFile: string;
  bodiesFile: string;
}

export function writeLoadFiles(workDir: string, keys: readonly string[], bodies: readonly string[]): LoadFiles {
  const keysFile = join(workDir, "wrk-keys.txt");
  const bodiesFile = join(workDir, "wrk-bodies.txt");
  writeFileSync(keysFile, `${keys.join("\n")}\n`);
  writeFileSync(bodiesFile, `${bodies.join("\n")}\n`);
  return { keysFile, bodiesFile };
}

export interface ClosedLoopOptions {
  port: number;
  pid: number;
  files: LoadFiles;
  workDir: string;
  threads: number;
  connections: number;
  warmupS: number;
  durationS: number;
}

function wrkTarget(o: ClosedLoopOptions) {
  return {
    url: `http://127.0.0.1:${o.port}`,
    threads: o.threads,
    connections: o.connections,
    site: BENCH_SITE,
    workDir: o.workDir,
    serverPid: o.pid,
    ...o.files,
  };
}

/** A short warm-up (JIT, caches, meter entries) when `warmupS` > 0, then the measured run. */
export async function closedLoop(o: ClosedLoopOptions): Promise<WrkResult & { generator: string }> {
  const target = wrkTarget(o);
  if (o.warmupS > 0) await runWrk({ ...target, durationS: o.warmupS });
  return { generator: WRK_GENERATOR, ...(await runWrk({ ...target, durationS: o.durationS })) };
}

export interface CeilingServer {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts `bun bench/ceiling-server.ts` answering `bodyFile`'s content to every request; or, with
 * `script`, another bare server that prints its port the same way (bench/minimal-decide.ts).
 */
export async function startCeilingServer(
  bodyFile: string,
  options: {
    cpus?: string;
    script?: string;
    env?: Record<string, string>;
    stderrFile?: string;
    /** How long it may take to print its port (15 s; a minimal decide warming a svc beside it takes longer). */
    startupMs?: number;
  } = {},
): Promise<CeilingServer> {
  const command = [process.execPath, options.script ?? "bench/ceiling-server.ts"];
  const child = track(
    Bun.spawn(options.cpus ? ["taskset", "-c", options.cpus, ...command] : command, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PORT: "0", CEILING_BODY_FILE: bodyFile, ...options.env },
      stdout: "pipe",
      // The runtime's own logging (JavaScriptCore's, with BUN_JSC_ options) to a file when asked.
      stderr: options.stderrFile === undefined ? "inherit" : Bun.file(options.stderrFile),
    }),
  );
  const reader = child.stdout.getReader();
  let out = "";
  const deadline = Date.now() + (options.startupMs ?? 15_000);
  let pending = reader.read();
  while (Date.now() < deadline) {
    const chunk = await Promise.race([pending, Bun.sleep(500).then(() => null)]);
    if (chunk === null) {
      if (child.exitCode !== null) break;
      continue;
    }
    if (chunk.done) break;
    out += new TextDecoder().decode(chunk.value);
    pending = reader.read();
    const match = out.match(/"port":(\d+)/);
    if (match) {
      // Keep draining so the pipe never fills.
      void (async () => {
        while (!(await pending).done) pending = reader.read();
      })();
      return {
        pid: child.pid,
        port: Number(match[1]),
        async stop() {
          child.kill("SIGTERM");
          await Promise.race([child.exited, Bun.sleep(3_000)]);
          if (child.exitCode === null) child.kill("SIGKILL");
        },
      };
    }
  }
  child.kill("SIGKILL");
  throw new Error(`ceiling server did not start: ${out}`);
}

/** One measured segment of an interleaved closed-loop run. */
export interface SegmentSummary {
  rps: number;
  p50_ms: number;
  p99_ms: number;
}

export type CombinedResult = WrkResult & { generator: string; segments: SegmentSummary[] };

/**
 * Segments of one closed-loop load, combined: requests and time summed (so `rps` is over the
 * whole measured time), p50/p90/mean weighted by each segment's requests, p99/p99.9/max the
 * worst segment's (a conservative reading, since wrk reports percentiles per run only), CPU
 * shares weighted by time.
 */
export function combineSegments(parts: readonly WrkResult[]): CombinedResult {
  const first = parts[0];
  if (first === undefined) throw new Error("no segment to combine");
  const requests = parts.reduce((a, p) => a + p.requests, 0);
  const duration = parts.reduce((a, p) => a + p.duration_s, 0);
  const byRequests = (f: (p: WrkResult) => number) =>
    requests > 0 ? parts.reduce((a, p) => a + f(p) * p.requests, 0) / requests : 0;
  const byTime = (f: (p: WrkResult) => number) =>
    duration > 0 ? parts.reduce((a, p) => a + f(p) * p.duration_s, 0) / duration : 0;
  const worst = (f: (p: WrkResult) => number) => Math.max(...parts.map(f));
  const non2xx = parts.reduce((a, p) => a + p.non_2xx, 0);
  const sum = (k: keyof WrkResult["socket_errors"]) => parts.reduce((a, p) => a + p.socket_errors[k], 0);
  const serverKnown = parts.every((p) => p.server_cpu_cores !== null);
  return {
    generator: WRK_GENERATOR,
    rps: round(requests / duration, 1),
    requests,
    duration_s: round(duration),
    p50_ms: round(byRequests((p) => p.p50_ms)),
    p90_ms: round(byRequests((p) => p.p90_ms)),
    p99_ms: worst((p) => p.p99_ms),
    p999_ms: worst((p) => p.p999_ms),
    mean_ms: round(byRequests((p) => p.mean_ms)),
    max_ms: worst((p) => p.max_ms),
    non_2xx: non2xx,
    non_2xx_share: requests > 0 ? round(non2xx / requests, 6) : 0,
    socket_errors: { connect: sum("connect"), read: sum("read"), write: sum("write"), timeout: sum("timeout") },
    threads: first.threads,
    connections: first.connections,
    generator_cpu_cores: round(
      byTime((p) => p.generator_cpu_cores),
      2,
    ),
    server_cpu_cores: serverKnown
      ? round(
          byTime((p) => p.server_cpu_cores as number),
          2,
        )
      : null,
    segments: parts.map((p) => ({ rps: p.rps, p50_ms: p.p50_ms, p99_ms: p.p99_ms })),
  };
}

/**
 * Saturation and ceiling measured in alternating segments (decide, bare, decide, bare, ...):
 * a shared virtual machine changes speed from minute to minute (other guests, steal), and
 * alternating puts both servers through the same phases, so their ratio holds where two runs
 * one after the other could land in different phases. The caller warms both first;
 * `aroundDecide` wraps the decide segments as a whole (e.g. to note when they ran).
 */
export async function interleavedClosedLoops(
  decide: ClosedLoopOptions,
  bare: ClosedLoopOptions,
  segments: number,
  aroundDecide: (run: () => Promise<WrkResult[]>) => Promise<WrkResult[]> = (run) => run(),
): Promise<{ saturation: CombinedResult; ceiling: CombinedResult }> {
  const d = wrkTarget(decide);
  const b = wrkTarget(bare);
  const each = Math.max(1, Math.round(decide.durationS / segments));
  const bareParts: WrkResult[] = [];
  const decideParts = await aroundDecide(async () => {
    const parts: WrkResult[] = [];
    for (let i = 0; i < segments; i++) {
      parts.push(await runWrk({ ...d, durationS: each }));
      bareParts.push(await runWrk({ ...b, durationS: each }));
    }
    return parts;
  });
  return { saturation: combineSegments(decideParts), ceiling: combineSegments(bareParts) };
}

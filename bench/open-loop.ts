/**
 * The open-loop sender: `bench/open-loop.c`, built with the machine's C compiler on first use (no
 * wrk2, vegeta or k6 is available from npm or Debian; the C file says why it is not TypeScript).
 * Every request has an intended send time fixed before the run; when it comes, the request is
 * written on an idle keep-alive connection (one request in flight per connection; the pool grows
 * when all are busy, and a request waits in a backlog only while a new connection opens or the
 * pool is at its cap), whatever the server is doing. Latency runs from the INTENDED time to the
 * last byte of the response, so a stalled server cannot hide its queue (no coordinated omission).
 * The sender's own lateness is recorded separately (`send lag`).
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { RequestPool } from "./http-conn";
import { ensurePackage, track } from "./proc";

export interface OpenLoopPlan {
  port: number;
  /** Pre-built requests; the schedule refers to them by index. */
  requests: RequestPool;
  /** Intended send times, epoch milliseconds (fractional), ascending. */
  sendAtEpoch: Float64Array;
  /** Request index of each send. */
  requestOf: Uint32Array;
  /** Connections opened before the first send, and the most the pool may grow to. */
  connections: number;
  maxConnections?: number;
  /** How long to wait for the last responses after the last send. */
  drainTimeoutMs?: number;
  /**
   * Tests only: the sender's n-th write (1-based) fails as on a connection the server has reset,
   * a failure no server on 127.0.0.1 can be made to cause at a chosen moment. 0 or absent: none.
   */
  failWriteAt?: number;
  /**
   * A connection idle longer than this (ms) is closed rather than written on (5,000 by default,
   * half of svc's 10-s keep-alive idle timeout): a request written as the server closes an idle
   * connection is lost, and no client's pool keeps idle sockets that long.
   */
  idleReuseMs?: number;
  /** Run the sender on these CPUs only (`taskset -c`), as the pinned bench does. */
  cpus?: string;
}

export interface OpenLoopResult {
  sends: number;
  completed: number;
  /** 0 where no response came (connection error or timeout). */
  status: Uint16Array;
  retryAfter: Uint8Array;
  /** Response time minus intended send time (ms); NaN without a response. */
  latencyMs: Float64Array;
  /** When the sender got to the send minus its intended time (ms): the sender's own lateness. */
  sendLagMs: Float64Array;
  /** Actual write minus intended time (ms): lateness plus any wait for a free connection. */
  writeDelayMs: Float64Array;
  /** Epoch ms of the actual write and of the response. */
  sentEpoch: Float64Array;
  recvEpoch: Float64Array;
  connectionErrors: string[];
  /** Connections the pool grew to. */
  connectionsUsed: number;
  /** Connections the sender closed for sitting idle longer than `idleReuseMs`. */
  connectionsRetired: number;
  sender: { cpu_s: number; wall_s: number; cores: number };
  /** How late the sender was ready for the first send (set-up overran its lead); should be 0. */
  lateStartMs: number;
  /** The sender ran as a real-time (SCHED_FIFO) thread; without the privilege it cannot. */
  realtime: boolean;
}

const SOURCE = join(import.meta.dir, "open-loop.c");
const BINARY = join(import.meta.dir, ".build", "open-loop");

/** What names the sender in the results file. */
export const OPEN_LOOP_GENERATOR = "bench/open-loop.c (epoll, HTTP/1.1 keep-alive pool, open loop)";

/** Builds the sender when its binary is missing or older than its source (installs gcc if need be). */
export async function ensureOpenLoopSender(): Promise<string> {
  const built = (() => {
    try {
      return statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs;
    } catch {
      return false;
    }
  })();
  if (built) return BINARY;
  await ensurePackage("cc", "gcc");
  mkdirSync(dirname(BINARY), { recursive: true });
  // Built beside its final name and renamed, so a sender that starts meanwhile never runs half a file.
  const partial = `${BINARY}.${process.pid}`;
  const cc = Bun.spawnSync(["cc", "-O2", "-Wall", "-Wextra", "-o", partial, SOURCE, "-lm"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (cc.exitCode !== 0) throw new Error(`could not build ${SOURCE}: ${cc.stderr.toString().trim()}`);
  renameSync(partial, BINARY);
  return BINARY;
}

// The files the sender reads and writes (little-endian, this machine's own):
//   plan:    10 × u32 header (magic "OLP2", port, connections, max connections, drain timeout ms,
//            requests, sends, the write to fail or 0, idle reuse ms, 0), f64 × sends intended epoch ms, u32 × sends request index,
//            u32 × (requests + 1) byte offsets, then the requests' bytes;
//   results: 6 × u32 (magic "OLR2", sent, completed, connections used, connections retired, 0), 4 × f64 (late start ms,
//            CPU s, wall s, 1 when it ran real-time), f64 × sends each of latency, send lag, write delay, sent epoch and
//            received epoch (NaN where none), u16 × sends status (0: no response), u8 × sends
//            Retry-After present.
const PLAN_MAGIC = 0x32504c4f;
const RESULT_MAGIC = 0x32524c4f;
const PLAN_HEAD = 40;
const RESULT_HEAD = 56;

function planBytes(plan: OpenLoopPlan): Uint8Array {
  const n = plan.sendAtEpoch.length;
  if (plan.requestOf.length !== n) throw new Error("runOpenLoop: sendAtEpoch and requestOf differ in length");
  const { bytes, offsets } = plan.requests.raw();
  const requests = offsets.length - 1;
  const head = new Uint32Array([
    PLAN_MAGIC,
    plan.port,
    plan.connections,
    plan.maxConnections ?? 512,
    plan.drainTimeoutMs ?? 10_000,
    requests,
    n,
    plan.failWriteAt ?? 0,
    plan.idleReuseMs ?? 5_000,
    0,
  ]);
  const out = new Uint8Array(PLAN_HEAD + n * 12 + offsets.byteLength + bytes.byteLength);
  let at = 0;
  for (const part of [head, plan.sendAtEpoch, plan.requestOf, offsets, bytes]) {
    out.set(new Uint8Array(part.buffer, part.byteOffset, part.byteLength), at);
    at += part.byteLength;
  }
  return out;
}

function parseResults(buf: ArrayBuffer, n: number, connectionErrors: string[]): OpenLoopResult {
  const head = new Uint32Array(buf, 0, 6);
  const times = new Float64Array(buf, 24, 4);
  const H = RESULT_HEAD;
  if (head[0] !== RESULT_MAGIC || buf.byteLength !== H + n * 43) throw new Error("malformed open-loop results");
  const f64 = (k: number) => new Float64Array(buf.slice(H + k * n * 8, H + (k + 1) * n * 8));
  const [cpu_s, wall_s] = [times[1] as number, times[2] as number];
  return {
    sends: head[1] as number,
    completed: head[2] as number,
    latencyMs: f64(0),
    sendLagMs: f64(1),
    writeDelayMs: f64(2),
    sentEpoch: f64(3),
    recvEpoch: f64(4),
    status: new Uint16Array(buf.slice(H + 40 * n, H + 42 * n)),
    retryAfter: new Uint8Array(buf.slice(H + 42 * n, H + 43 * n)),
    connectionErrors,
    connectionsUsed: head[3] as number,
    connectionsRetired: head[4] as number,
    sender: { cpu_s, wall_s, cores: wall_s > 0 ? cpu_s / wall_s : 0 },
    lateStartMs: times[0] as number,
    realtime: times[3] === 1,
  };
}

export async function runOpenLoop(plan: OpenLoopPlan): Promise<OpenLoopResult> {
  const binary = await ensureOpenLoopSender();
  const dir = mkdtempSync(join(tmpdir(), "svc-open-loop-"));
  try {
    const planPath = join(dir, "plan");
    const resultsPath = join(dir, "results");
    await Bun.write(planPath, planBytes(plan));
    const command = [binary, planPath, resultsPath];
    const argv = plan.cpus ? ["taskset", "-c", plan.cpus, ...command] : command;
    const child = track(Bun.spawn(argv, { stdout: "inherit", stderr: "pipe" }));
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    const lines = stderr.split("\n").filter((l) => l !== "");
    if (code !== 0) throw new Error(`open-loop sender exited with ${code}: ${lines.join("; ")}`);
    const connectionErrors: string[] = [];
    for (const line of lines) {
      if (line.startsWith("connection error: ")) connectionErrors.push(line.slice(18));
      else console.log(`open-loop sender: ${line}`);
    }
    return parseResults(await Bun.file(resultsPath).arrayBuffer(), plan.sendAtEpoch.length, connectionErrors);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Latencies of answered requests, compacted (for percentiles). */
export function answeredLatencies(r: OpenLoopResult, filter?: (i: number) => boolean): Float64Array {
  const out = new Float64Array(r.latencyMs.length);
  let k = 0;
  for (let i = 0; i < r.latencyMs.length; i++) {
    if (r.status[i] !== 0 && (!filter || filter(i))) out[k++] = r.latencyMs[i] as number;
  }
  return out.subarray(0, k);
}

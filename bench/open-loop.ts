/**
 * The open-loop sender (no wrk2, vegeta or k6 is available from npm or Debian). Every request
 * has an intended send time fixed before the run; when it comes, the request is written on an
 * idle keep-alive connection (one request in flight per connection; the pool grows when all are
 * busy, and a request waits in a backlog only while a new connection opens or the pool is at its
 * cap), whatever the server is doing. Latency runs from the INTENDED time to the last byte of the
 * response, so a stalled server cannot hide its queue (no coordinated omission). The sender's own
 * lateness is recorded separately (`send lag`).
 */
import { HttpConnection, type RequestPool } from "./http-conn";
import { selfCpu } from "./proc";

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
   * How sends are timed: `worker` (default) sleeps in a worker thread on a futex and wakes the
   * main thread when sends are due; `spin` polls with setImmediate (one core busy).
   */
  pacer?: "worker" | "spin";
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
  sender: { cpu_s: number; wall_s: number; cores: number };
  /** How late the sender was ready for the first send (set-up overran its lead); should be 0. */
  lateStartMs: number;
}

/** Epoch ms minus performance.now(), measured as tightly as Date.now()'s resolution allows. */
export function clockOffset(): number {
  let best = Number.POSITIVE_INFINITY;
  let offset = 0;
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    const d = Date.now();
    const b = performance.now();
    if (b - a < best) {
      best = b - a;
      offset = d - (a + b) / 2;
    }
  }
  return offset;
}

export async function runOpenLoop(plan: OpenLoopPlan): Promise<OpenLoopResult> {
  const n = plan.sendAtEpoch.length;
  const offset = clockOffset();
  const at = new Float64Array(n);
  for (let i = 0; i < n; i++) at[i] = (plan.sendAtEpoch[i] as number) - offset;
  const maxConnections = plan.maxConnections ?? 512;

  const status = new Uint16Array(n);
  const retryAfter = new Uint8Array(n);
  const latencyMs = new Float64Array(n).fill(Number.NaN);
  const sendLagMs = new Float64Array(n).fill(Number.NaN);
  const writeDelayMs = new Float64Array(n).fill(Number.NaN);
  const sentEpoch = new Float64Array(n).fill(Number.NaN);
  const recvEpoch = new Float64Array(n).fill(Number.NaN);
  let completed = 0;
  let sent = 0;
  let sendingOver = false;
  let resolveDone: () => void = () => {};
  const allDone = new Promise<void>((r) => {
    resolveDone = r;
  });

  const conns: HttpConnection[] = [];
  const idle: HttpConnection[] = [];
  // Sends waiting for a connection, first in first out.
  const backlog = new Int32Array(n);
  let backlogHead = 0;
  let backlogTail = 0;
  let opening = 0;
  let nextIndex = 0;

  const write = (conn: HttpConnection, i: number) => {
    const t = performance.now();
    if (conn.send(plan.requests.get(plan.requestOf[i] as number), i)) {
      writeDelayMs[i] = t - (at[i] as number);
      sentEpoch[i] = t + offset;
      sent++;
      return true;
    }
    return false;
  };
  /** A connection is free: it takes the oldest waiting send, else goes back to the idle list. */
  const release = (conn: HttpConnection) => {
    while (backlogHead < backlogTail) {
      if (conn.closed) return;
      if (write(conn, backlog[backlogHead++] as number)) return;
    }
    if (!conn.closed) idle.push(conn);
  };
  const open = async () => {
    const index = nextIndex++;
    opening++;
    try {
      const conn = await HttpConnection.open(plan.port, (tag, code, retry, now) => {
        status[tag] = code;
        retryAfter[tag] = retry ? 1 : 0;
        latencyMs[tag] = now - (at[tag] as number);
        recvEpoch[tag] = now + offset;
        completed++;
        if (sendingOver && completed >= sent && backlogHead >= backlogTail) resolveDone();
        release(conns[index] as HttpConnection);
      });
      conns[index] = conn;
      return conn;
    } finally {
      opening--;
    }
  };
  const dispatch = (i: number) => {
    sendLagMs[i] = performance.now() - (at[i] as number);
    let conn = idle.pop();
    while (conn?.closed) conn = idle.pop();
    if (conn && write(conn, i)) return;
    backlog[backlogTail++] = i;
    // Grow gently: a connect costs the sender about a millisecond, so opening one per waiting
    // request during a short stall would turn that stall into a long one.
    if (opening < 2 && nextIndex < maxConnections) {
      void open().then(
        (c) => release(c),
        () => {},
      );
    }
  };

  // A full collection now, so garbage from set-up or an earlier scenario is not collected mid-run.
  Bun.gc(true);
  // Connect shortly before the first send: servers close idle keep-alive connections (Bun: 10 s).
  const first = n > 0 ? (at[0] as number) : performance.now();
  while (first - performance.now() > 500) await Bun.sleep(Math.min(1_000, first - performance.now() - 400));
  await Promise.all(Array.from({ length: plan.connections }, () => open()));
  for (const c of conns) if (c) idle.push(c);
  while (first - performance.now() > 20) await Bun.sleep(first - performance.now() - 15);
  const lateStartMs = Math.max(0, performance.now() - first);

  const cpu = selfCpu();
  let i = 0;
  const sendDue = (upTo: number) => {
    while (i < upTo) dispatch(i++);
  };
  if ((plan.pacer ?? "worker") === "worker") {
    const worker = new Worker(new URL("./pacer-worker.ts", import.meta.url).href);
    try {
      await new Promise<void>((resolve, reject) => {
        worker.onmessage = (event: MessageEvent<number>) => {
          if (event.data < 0) resolve();
          else sendDue(event.data);
        };
        worker.onerror = (event) => reject(new Error(`pacer worker failed: ${event.message}`));
        // The worker's clock: performance.timeOrigin + performance.now(), the same in every thread.
        const times = new Float64Array(n);
        const toOrigin = performance.timeOrigin;
        for (let k = 0; k < n; k++) times[k] = (at[k] as number) + toOrigin;
        worker.postMessage({ times, earlyMs: 0 });
      });
      sendDue(n);
    } finally {
      worker.terminate();
    }
  } else {
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now();
        let due = i;
        while (due < n && (at[due] as number) <= now) due++;
        sendDue(due);
        if (i >= n) {
          resolve();
          return;
        }
        const wait = (at[i] as number) - performance.now();
        // Timers are millisecond-grained: sleep only when the next send is well ahead, else spin.
        if (wait > 3) setTimeout(tick, wait - 2);
        else setImmediate(tick);
      };
      tick();
    });
  }
  sendingOver = true;
  if (completed < n) {
    await Promise.race([allDone, Bun.sleep(plan.drainTimeoutMs ?? 10_000)]);
  }
  const usage = cpu.stop();
  const connectionErrors: string[] = [];
  for (const c of conns) {
    if (c?.error) connectionErrors.push(c.error);
    c?.close();
  }
  return {
    sends: sent,
    completed,
    status,
    retryAfter,
    latencyMs,
    sendLagMs,
    writeDelayMs,
    sentEpoch,
    recvEpoch,
    connectionErrors,
    connectionsUsed: nextIndex,
    sender: usage,
    lateStartMs,
  };
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

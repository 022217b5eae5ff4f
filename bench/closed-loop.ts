/**
 * A closed-loop driver for work that is counted rather than timed per request: priming the
 * readers' meters and touching N new subjects for the memory scenario. Each connection keeps one
 * request in flight (see http-conn.ts on pipelining); each answer sends the next request.
 */
import { HttpConnection } from "./http-conn";
import { procCpu, selfCpu } from "./proc";
import { round } from "./stats";

export interface DriveOptions {
  port: number;
  /** Requests to send, numbered 0..count-1. */
  count: number;
  requestFor: (n: number) => Uint8Array;
  timeLimitS: number;
  serverPid: number;
  connections?: number;
  depth?: number;
  /** Called every `sampleMs` while running (e.g. to sample the server's memory). */
  onSample?: (answered200: number) => void;
  sampleMs?: number;
}

export interface DriveResult {
  sent: number;
  status_200: number;
  status_other: number;
  no_response: number;
  duration_s: number;
  rps: number;
  time_limit_hit: boolean;
  server_cpu_cores: number;
  generator_cpu_cores: number;
}

export async function driveClosedLoop(o: DriveOptions): Promise<DriveResult> {
  const connections = o.connections ?? 64;
  const depth = o.depth ?? 1;
  let next = 0;
  let ok = 0;
  let other = 0;
  let answered = 0;
  let timeLimitHit = false;
  const deadline = performance.now() + o.timeLimitS * 1000;
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => {
    finish = r;
  });
  const conns: HttpConnection[] = [];
  const sendOn = (conn: HttpConnection) => {
    if (next >= o.count) return;
    if (performance.now() > deadline) {
      timeLimitHit = true;
      return;
    }
    const n = next++;
    conn.send(o.requestFor(n), n);
  };
  const onResponseOf = (index: number) => (_tag: number, status: number) => {
    answered++;
    if (status === 200) ok++;
    else other++;
    const conn = conns[index];
    if (conn) sendOn(conn);
    if (answered >= next && (next >= o.count || timeLimitHit)) finish();
  };
  for (let c = 0; c < connections; c++) conns.push(await HttpConnection.open(o.port, onResponseOf(c)));

  const server = procCpu(o.serverPid);
  const self = selfCpu();
  const started = performance.now();
  const sampler = o.onSample ? setInterval(() => o.onSample?.(ok), o.sampleMs ?? 2_000) : null;
  for (const conn of conns) for (let d = 0; d < depth; d++) sendOn(conn);
  if (o.count === 0) finish();
  // Bounded: the time limit stops new sends; answers in flight get a few more seconds.
  await Promise.race([finished, Bun.sleep(o.timeLimitS * 1000 + 10_000)]);
  const duration = (performance.now() - started) / 1000;
  if (sampler) clearInterval(sampler);
  const serverCpu = server.stop();
  const genCpu = self.stop();
  for (const conn of conns) conn.close();
  return {
    sent: next,
    status_200: ok,
    status_other: other,
    no_response: next - answered,
    duration_s: round(duration, 2),
    rps: round(answered / duration, 1),
    time_limit_hit: timeLimitHit,
    server_cpu_cores: round(serverCpu.cores, 2),
    generator_cpu_cores: round(genCpu.cores, 2),
  };
}

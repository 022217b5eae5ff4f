/**
 * What held the server's core while keyed decide's answers were late, from the files
 * bench/tail-variants.ts leaves (not part of `npm run bench`):
 *
 * - `npx bun bench/stall-report.ts sched <perf.data>`: the scheduler trace (`PERF_OUT`, one file a server) as CPU time
 *   per thread on the core, its stretches over 1 ms, and how long the request thread (the one
 *   longest on the core) waited behind another thread, by that thread's name: taken off the
 *   core while runnable, and woken while the other held the core.
 * - `npx bun bench/stall-report.ts gc <server log>`: the collections `BUN_JSC_logGC=1` logged (run
 *   tail-variants with `TAIL_LOG_DIR`), per heap (the request thread's, the database thread's) and
 *   kind, with every stop of the world (bench/gc-log.ts).
 * - `npx bun bench/stall-report.ts profile <file.cpuprofile>`: the request thread's profile
 *   (`PROFILE_DIR`, best with `BENCH_PROFILE_INTERVAL_US=100`) as its busy stretches over 2.5 ms
 *   (samples less than 0.5 ms apart; `STRETCH_MS` sets the length) and the outermost project frames
 *   found in them.
 */
import { readFileSync } from "node:fs";
import { collectionsIn, describeCollections } from "./gc-log";

type Switch = { at: number; prevTid: number; prevName: string; prevState: string; nextTid: number; nextName: string };
type Wakeup = { at: number; tid: number; name: string };

/** The scheduler events `perf record` wrote (sched_switch, sched_wakeup), times in ms. */
function schedEvents(file: string): (Switch | Wakeup)[] {
  const text = Bun.spawnSync(["perf", "script", "-i", file, "-F", "comm,tid,time,event,trace"], {
    stderr: "ignore",
  }).stdout.toString();
  const events: (Switch | Wakeup)[] = [];
  for (const line of text.split("\n")) {
    const s =
      /\s([\d.]+): sched:sched_switch: prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/.exec(
        line,
      );
    if (s) {
      events.push({
        at: Number(s[1]) * 1000,
        prevName: s[2] as string,
        prevTid: Number(s[3]),
        prevState: s[4] as string,
        nextName: s[5] as string,
        nextTid: Number(s[6]),
      });
      continue;
    }
    const w = /\s([\d.]+): sched:sched_wakeup: comm=(.*?) pid=(\d+)/.exec(line);
    if (w) events.push({ at: Number(w[1]) * 1000, name: w[2] as string, tid: Number(w[3]) });
  }
  return events;
}

function sched(file: string): void {
  const events = schedEvents(file);
  const names = new Map<number, string>();
  const runs = new Map<number, number[]>();
  let running: number | undefined;
  let since = 0;
  for (const e of events) {
    if (!("nextTid" in e)) continue;
    names.set(e.prevTid, e.prevName);
    names.set(e.nextTid, e.nextName);
    if (running !== undefined) {
      const list = runs.get(running) ?? [];
      list.push(e.at - since);
      runs.set(running, list);
    }
    running = e.nextTid;
    since = e.at;
  }
  const first = events[0]?.at ?? 0;
  const span = (events[events.length - 1]?.at ?? 0) - first;
  console.log(`${(span / 1000).toFixed(2)} s traced`);
  const rows = [...runs].map(([tid, r]) => ({ tid, total: r.reduce((a, b) => a + b, 0), r }));
  rows.sort((a, b) => b.total - a.total);
  for (const { tid, total, r } of rows.slice(0, 12)) {
    console.log(
      `${names.get(tid)} (${tid}): ${(total / 1000).toFixed(3)} s on the core, ${r.length} stretches, ${r.filter((x) => x > 1).length} over 1 ms, longest ${Math.max(...r).toFixed(1)} ms`,
    );
  }
  // The request thread: the one longest on the core (the server's core carries its threads only);
  // with the decide thread on that is the Worker answering keyed decide, not `bun.exe`.
  const main = rows.find(({ tid }) => !(names.get(tid) ?? "").startsWith("swapper"))?.tid;
  if (main === undefined) return;
  // The request thread taken off the core while runnable, and how long until it ran again.
  const behind = new Map<string, number[]>();
  let out: { at: number; by: string } | undefined;
  for (const e of events) {
    if (!("nextTid" in e)) continue;
    if (e.prevTid === main && e.prevState.startsWith("R")) out = { at: e.at, by: `${e.nextName} (${e.nextTid})` };
    else if (e.nextTid === main && out !== undefined) {
      const waits = behind.get(out.by) ?? [];
      waits.push(e.at - out.at);
      behind.set(out.by, waits);
      out = undefined;
    }
  }
  console.log(`request thread (${main}) waiting while runnable, by the thread that took the core:`);
  printWaits(behind);
  // The request thread woken (a request came) while another thread held the core, and how long
  // until it ran: the delay a waking thread gets behind a busy one.
  const late = new Map<string, number[]>();
  let woken: { at: number; by: string } | undefined;
  let onCore = "";
  for (const e of events) {
    if (!("nextTid" in e)) {
      if (e.tid === main && woken === undefined && onCore !== "" && onCore !== "swapper/0")
        woken = { at: e.at, by: onCore };
      continue;
    }
    onCore = e.nextName;
    if (e.nextTid === main && woken !== undefined) {
      const waits = late.get(woken.by) ?? [];
      waits.push(e.at - woken.at);
      late.set(woken.by, waits);
    }
    if (e.nextTid === main) woken = undefined;
  }
  console.log(`request thread (${main}) woken while another thread held the core, by that thread:`);
  printWaits(late);
}

function printWaits(waits: Map<string, number[]>): void {
  for (const [name, w] of [...waits].sort((a, b) => b[1].length - a[1].length)) {
    const total = w.reduce((a, b) => a + b, 0);
    console.log(
      `  ${name}: ${w.length} times, ${total.toFixed(1)} ms in all, ${w.filter((x) => x > 1).length} over 1 ms, longest ${Math.max(...w).toFixed(1)} ms`,
    );
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

function profile(file: string): void {
  const p = JSON.parse(readFileSync(file, "utf8")) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  /** The outermost frames of this project's TypeScript in a sample's stack. */
  const outer = (id: number): string => {
    const frames: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = nodes.get(at)?.callFrame;
      if (f?.url.endsWith(".ts"))
        frames.push(`${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber}`);
    }
    return frames.slice(-2).reverse().join(" > ") || "(no project frame)";
  };
  const times: number[] = [];
  let t = p.startTime;
  for (const d of p.timeDeltas) {
    t += d;
    times.push(t);
  }
  const stretchUs = Number(process.env.STRETCH_MS ?? 2.5) * 1000;
  const found = new Map<string, number>();
  let bursts = 0;
  let start = 0;
  for (let i = 1; i <= times.length; i++) {
    if (i < times.length && (times[i] as number) - (times[i - 1] as number) <= 500) continue;
    if ((times[i - 1] as number) - (times[start] as number) > stretchUs) {
      bursts++;
      for (let k = start; k < i; k++) {
        const key = outer(p.samples[k] as number);
        found.set(key, (found.get(key) ?? 0) + 1);
      }
    }
    start = i;
  }
  console.log(
    `${p.samples.length} samples; ${bursts} busy stretches over ${stretchUs / 1000} ms; their samples by outer frames:`,
  );
  for (const [key, n] of [...found].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${n} ${key}`);
}

function gc(file: string): void {
  for (const line of describeCollections(collectionsIn(readFileSync(file, "utf8")))) console.log(line);
}

/**
 * Each stretch of slow answers (tail-variants' `<perf>.<server>.slow.json`: answers over 1 ms,
 * by when they were meant to be sent) whose slowest took `minMs` or more, with what ran on the
 * server's core from 1 ms before its first request was due until its slowest was answered: each
 * thread's turn on the core, and how it left (R: taken off while runnable; S, D: it waited).
 */
function timeline(file: string, slowFile: string, minMs: number): void {
  const all = schedEvents(file);
  const events = all.filter((e): e is Switch => "nextTid" in e);
  const wakeups = all.filter((e): e is Wakeup => !("nextTid" in e));
  // The request thread: the one longest on the core (as in `sched`).
  const onCoreMs = new Map<number, number>();
  for (let i = 1; i < events.length; i++) {
    const before = events[i - 1] as Switch;
    onCoreMs.set(before.nextTid, (onCoreMs.get(before.nextTid) ?? 0) + (events[i] as Switch).at - before.at);
  }
  const request = [...onCoreMs].filter(([tid]) => tid !== 0).sort((a, b) => b[1] - a[1])[0]?.[0];
  const { monotonicMinusEpochMs, slow } = JSON.parse(readFileSync(slowFile, "utf8")) as {
    monotonicMinusEpochMs: number;
    slow: [number, number][];
  };
  const first = events[0]?.at ?? 0;
  const last = events[events.length - 1]?.at ?? 0;
  type Stretch = { from: number; until: number; worst: number; count: number };
  const stretches: Stretch[] = [];
  for (const [sentEpoch, latency] of slow.sort((a, b) => a[0] - b[0])) {
    const at = sentEpoch + monotonicMinusEpochMs;
    const open = stretches[stretches.length - 1];
    if (open !== undefined && at - open.until < 2) {
      open.until = Math.max(open.until, at);
      open.worst = Math.max(open.worst, latency);
      open.count++;
    } else stretches.push({ from: at, until: at, worst: latency, count: 1 });
  }
  const shown = stretches.filter((s) => s.worst >= minMs && s.from >= first && s.from <= last);
  console.log(
    `${stretches.length} stretches of answers over 1 ms, ${shown.length} with one of ${minMs} ms or more inside the trace`,
  );
  for (const s of shown) {
    const from = s.from - 1;
    const until = s.from + s.worst;
    console.log(
      `\n${s.count} answers over 1 ms, the slowest ${s.worst.toFixed(1)} ms, due from ${(s.from - first).toFixed(1)} ms:`,
    );
    let onCore = events.findLast((e) => e.at <= from);
    const turns: string[] = [];
    const inside = [...events, ...wakeups.filter((w) => w.tid === request)]
      .filter((e) => e.at > from && e.at <= until)
      .sort((a, b) => a.at - b.at);
    for (const e of inside) {
      // The request thread woken (a request came, or what it waited for): when, into the turn on the core.
      if (!("nextTid" in e)) {
        turns.push(`[woken ${(e.at - Math.max(onCore?.at ?? from, from)).toFixed(2)} into it]`);
        continue;
      }
      if (onCore !== undefined) {
        const began = Math.max(onCore.at, from);
        turns.push(`${onCore.nextName}(${onCore.nextTid}) ${(e.at - began).toFixed(2)}${e.prevState.slice(0, 1)}`);
      }
      onCore = e;
    }
    console.log(`  ${turns.join(", ")}`);
  }
}

const [mode, file, extra, minMs] = process.argv.slice(2);
if (mode === "sched" && file) sched(file);
else if (mode === "timeline" && file && extra) timeline(file, extra, Number(minMs ?? 3));
else if (mode === "gc" && file) gc(file);
else if (mode === "profile" && file) profile(file);
else {
  console.error(
    "usage: bench/stall-report.ts sched <perf.data> | timeline <perf.data> <slow.json> [min ms] | gc <server log> | profile <file.cpuprofile>",
  );
  process.exit(2);
}

/**
 * The embedded store's thread: PGlite (Postgres compiled to WebAssembly) runs here, so its
 * work (counter flushes, cold reads, every query) never blocks the thread that serves
 * requests. The server talks to it through `PGliteThread` (db/pglite-thread.ts).
 */

import { dlopen, FFIType, ptr } from "bun:ffi";
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { PGlite, types } from "@electric-sql/pglite";
import type { ThreadReply, ThreadRequest } from "./pglite-thread";

declare const self: Worker;

/**
 * The parsers drizzle's PGlite driver passes with every query (values it maps itself stay the
 * strings Postgres sent). Functions cannot cross threads, so the same set is applied here.
 */
const raw = (value: string) => value;
const DRIZZLE_PARSERS = {
  [types.TIMESTAMP]: raw,
  [types.TIMESTAMPTZ]: raw,
  [types.INTERVAL]: raw,
  [types.DATE]: raw,
  1231: raw, // numeric[]
  1115: raw, // timestamp[]
  1185: raw, // timestamptz[]
  1187: raw, // interval[]
  1182: raw, // date[]
};

let client: PGlite | null = null;

/**
 * PGlite leaves garbage in proportion to what a statement carries (parameters and rows copied in
 * and out of its WebAssembly memory), and this thread's collector let it pile up: 1,000 small
 * statements grew the process by about 190 MB, 100 flush-sized ones by about 270 MB. So the thread
 * counts the work since its last full collection (one unit per statement, one more per 4 KB of
 * parameters and per 64 rows) and collects at COLLECT_AFTER units (unless opened with another),
 * here, where the request thread never waits for it.
 */
const COLLECT_AFTER = 64;
/** COLLECT_AFTER, unless the opener asked for another (tests: fewer collections, more memory). */
let collectAfter = COLLECT_AFTER;
/** And once statements stop coming for this long, what is left of it (no garbage stays idle). */
const QUIET_MS = 1_000;
let work = 0;
const quiet = setTimeout(collectNow, QUIET_MS);
quiet.unref();
function collectNow(): void {
  if (work === 0) return;
  work = 0;
  Bun.gc(true);
}
function collectNowAndThen(paramChars: number, rows: number): void {
  work += 1 + paramChars / 4096 + rows / 64;
  if (work >= collectAfter) collectNow();
  else quiet.refresh();
}

/**
 * Background work yields to request serving: on Linux this thread takes nice 10 (its own
 * thread id from /proc/thread-self; the rest of the process keeps its priority). When both
 * cores are busy, the request thread gets the CPU first, and the flush catches up after.
 * Elsewhere, or when not permitted, the thread keeps the process' priority.
 *
 * Nice 10 still lets it run out a time slice (up to a scheduler tick, 4 ms at 250 Hz) on the
 * request thread's core while requests wait: on one core shared with the request thread, a third
 * of the stretches of answers over 4 ms at 5,000 req/s waited so (bench/HISTORY.md, "The
 * request thread's core"). Opened with `idle` (`SVC_RUNTIME_THREADS=idle`), it moves to the idle
 * scheduling class instead, which gives way to a woken request thread at once, but does not run
 * at all while every core is busy: during a long overload the counters are not written (their
 * memory grows, /ready reports the flush behind) until a core is free. Unprivileged, a thread
 * cannot leave that class again, so it is a choice made at start.
 */
export const DATABASE_THREAD_NICE = 10;
/** Linux's SCHED_IDLE policy. */
const SCHED_IDLE = 5;
const threadId = (): number => Number(readlinkSync("/proc/thread-self").split("/").pop());
function lowerPriority(): void {
  try {
    const tid = threadId();
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, DATABASE_THREAD_NICE);
  } catch {
    // Not Linux, or not allowed: nothing to do.
  }
}
lowerPriority();

/** This thread in the idle scheduling class; false where it cannot be (not Linux, refused). */
function idleClass(): boolean {
  if (process.platform !== "linux") return false;
  try {
    const libc = dlopen("libc.so.6", {
      sched_setscheduler: { args: [FFIType.i32, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    });
    // struct sched_param { int sched_priority = 0 }.
    const done = libc.symbols.sched_setscheduler(threadId(), SCHED_IDLE, ptr(new Int32Array(1))) === 0;
    libc.close();
    return done;
  } catch {
    return false;
  }
}

function reply(message: ThreadReply): void {
  self.postMessage(message);
}

/** What survives the trip back: the message and Postgres' own error fields. */
function errorOf(error: unknown): ThreadReply & { ok: false } {
  const e = error as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const k of ["code", "detail", "hint", "severity", "schema", "table", "column", "constraint", "routine"]) {
    if (typeof e?.[k] === "string") fields[k] = e[k] as string;
  }
  return { id: 0, ok: false, message: error instanceof Error ? error.message : String(error), fields };
}

self.onmessage = async (event: MessageEvent<ThreadRequest>) => {
  const request = event.data;
  try {
    switch (request.op) {
      case "open": {
        collectAfter = request.collectAfter ?? COLLECT_AFTER;
        if (request.idle === true) idleClass();
        client =
          request.folder === null
            ? new PGlite(request.dump === undefined ? {} : { loadDataDir: new Blob([request.dump]) })
            : new PGlite(request.folder, { startParams: [...PGlite.defaultStartParams, ...request.settings] });
        await client.waitReady;
        // Opening leaves about 25 MB of garbage (the unpacked file bundle, the compile): drop it now.
        Bun.gc(true);
        reply({ id: request.id, ok: true, result: null });
        return;
      }
      case "query": {
        if (client === null) throw new Error("the embedded database is not open");
        const params = typeof request.params === "string" ? JSON.parse(request.params) : request.params;
        const r = await client.query(request.sql, params, {
          rowMode: request.rowMode,
          parsers: DRIZZLE_PARSERS,
        });
        reply({ id: request.id, ok: true, result: { rows: r.rows, fields: r.fields, affectedRows: r.affectedRows } });
        collectNowAndThen(typeof request.params === "string" ? request.params.length : 0, r.rows.length);
        return;
      }
      case "dump": {
        if (client === null) throw new Error("the embedded database is not open");
        // A CHECKPOINT first, so the copied files hold everything committed (not only the WAL).
        await client.query("checkpoint");
        const blob = await client.dumpDataDir("gzip");
        const bytes = new Uint8Array(await blob.arrayBuffer());
        self.postMessage({ id: request.id, ok: true, result: null, bytes } satisfies ThreadReply, [bytes.buffer]);
        return;
      }
      case "close": {
        await client?.close();
        client = null;
        reply({ id: request.id, ok: true, result: null });
        return;
      }
    }
  } catch (error) {
    reply({ ...errorOf(error), id: request.id });
  }
};

/**
 * The minimal decide served by a thread of its own (`MINIMAL_IN_WORKER=1`, bench/minimal-decide.ts):
 * a Worker has its own JavaScriptCore heap, so its collections trace only what this thread holds,
 * whatever the process's main thread holds beside it. Answers the main thread with its port and
 * the functions its heap holds.
 */
import { heapStats } from "bun:jsc";
import { startMinimalDecide } from "./minimal-decide";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ keys: string[]; port: number }>) => {
  const server = startMinimalDecide(new Set(event.data.keys), event.data.port);
  Bun.gc(true);
  self.postMessage({ port: server.port, executables: heapStats().objectTypeCounts.FunctionExecutable ?? 0 });
};

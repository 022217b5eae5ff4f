import { createLogger, type Logger } from "../../src/logger";

/** A clock tests drive by hand: no sleeps to wait for timers. */
export function manualClock(start = Date.parse("2026-11-21T12:00:00Z")) {
  let now = start;
  return {
    now: () => now,
    set: (ms: number) => {
      now = ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A logger that keeps its lines, so tests can assert what was (not) logged. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(
    createLogger("debug", (l) => lines.push(l)),
    { lines },
  );
}

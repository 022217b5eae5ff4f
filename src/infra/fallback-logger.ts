import type { Logger } from "../logger";

const line = (level: "warn" | "error", message: string, fields?: Record<string, unknown>) =>
  console.log(JSON.stringify({ level, time: new Date().toISOString(), message, ...fields }));

/**
 * Where a flush called without a logger (tests, tools) reports a refused row: warnings and errors
 * as the JSON lines `createLogger("warn")` writes, on stdout. Not that logger: the counters and
 * the key usage are among the modules keyed decide runs on, which load no pino. A flush asks for
 * no throttled warning, so `warnAtMostEvery` here does not throttle.
 */
export const fallbackLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (message, fields) => line("warn", message, fields),
  error: (message, fields) => line("error", message, fields),
  warnAtMostEvery: (_intervalMs, message, fields) => line("warn", message, fields),
};

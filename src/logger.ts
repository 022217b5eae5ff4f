import pino, { type DestinationStream } from "pino";

/** The logger every part is given. Never pass secrets (keys, tokens) in fields: only ids and prefixes. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /**
   * A warning logged at most once per `intervalMs` for its message (an outage under load would
   * otherwise flood the log); the next line logged counts those left out in `unlogged`.
   */
  warnAtMostEvery(intervalMs: number, message: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

/**
 * `json`: one JSON object a line, `{"level":"info","time":"<ISO 8601>","message":"...",
 * ...fields}` (the level as its name and the message under `message`, as this service's
 * lines always were, not pino's numeric `level` and `msg`). `pretty`: pino-pretty's coloured,
 * readable lines, for a developer's terminal (SVC_LOG_FORMAT=pretty, or NODE_ENV=development).
 */
export type LogFormat = "json" | "pretty";

/**
 * pino (https://getpino.io) writing synchronously to stdout, so a line is out before the process
 * exits or prints its next line with console.log (the demo's first start). `write` takes each
 * line instead (tests keep them); `base` adds fields to every line (a cluster worker's index).
 */
export function createLogger(
  level: LogLevel,
  write?: (line: string) => void,
  base?: Readonly<Record<string, unknown>>,
  format: LogFormat = "json",
): Logger {
  const destination: DestinationStream =
    write !== undefined
      ? { write: (line: string) => write(line.endsWith("\n") ? line.slice(0, -1) : line) }
      : format === "pretty"
        ? // Loaded only for a terminal's pretty lines: a JSON-logging server never holds it.
          (require("pino-pretty") as typeof import("pino-pretty"))({
            sync: true,
            messageKey: "message",
            translateTime: "SYS:HH:MM:ss.l",
          })
        : pino.destination({ dest: 1, sync: true });
  const log = pino(
    {
      level,
      messageKey: "message",
      // No pid or hostname on every line: the lines stay as they were (a worker adds its index).
      base: base === undefined ? null : { ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      // pino-pretty reads the numeric level; the JSON lines carry its name.
      formatters: format === "pretty" && write === undefined ? {} : { level: (label) => ({ level: label }) },
    },
    destination,
  );
  // The message is the merged object's first member, not pino's message argument (which it writes
  // last): lines keep reading `"message":"listening","port":3000`, as scripts match them.
  // This logger's throttled warnings: when each message was last logged, and how many since not.
  const throttled = new Map<string, { at: number; unlogged: number }>();
  return {
    debug: (message, fields) => log.debug({ message, ...fields }),
    info: (message, fields) => log.info({ message, ...fields }),
    warn: (message, fields) => log.warn({ message, ...fields }),
    error: (message, fields) => log.error({ message, ...fields }),
    warnAtMostEvery(intervalMs, message, fields) {
      const now = Date.now();
      const last = throttled.get(message);
      if (last !== undefined && now - last.at < intervalMs) {
        last.unlogged += 1;
        return;
      }
      log.warn({ message, ...fields, unlogged: last?.unlogged ?? 0 });
      throttled.set(message, { at: now, unlogged: 0 });
    },
  };
}

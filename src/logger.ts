/** JSON-lines logger. Never pass secrets (keys, tokens) in fields: only ids and prefixes. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export function createLogger(
  level: keyof typeof levels,
  write: (line: string) => void = (l) => console.log(l),
  /** Fields on every line (a cluster worker's index). */
  base?: Readonly<Record<string, unknown>>,
): Logger {
  const min = levels[level];
  const emit = (lvl: keyof typeof levels, message: string, fields?: Record<string, unknown>) => {
    if (levels[lvl] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, message, ...fields, ...base }));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

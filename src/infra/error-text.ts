/**
 * An error as a log line may carry it, with no value a request sent. A failed query (drizzle's
 * DrizzleQueryError) says `Failed query: <sql>\nparams: <every parameter>`, and the parameters are
 * readers' ids, article ids and addresses; Postgres quotes offending values in its own messages
 * (`invalid input syntax for type uuid: "…"`). So a query error is logged by its SQLSTATE, the
 * statement's opening (our own text, parameterised) and Postgres' message with every quoted
 * part masked; other errors by name and message, as before.
 */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (!isQueryError(error)) return `${error.name}: ${error.message}`;
  const cause = error.cause;
  const code = sqlStateIn(cause);
  const reason = cause instanceof Error ? maskQuoted(firstLine(cause.message)) : "no reason given";
  const statement = firstLine(error.query).trim().slice(0, 120);
  return `query failed${code === null ? "" : ` (SQLSTATE ${code})`}: ${reason} [${statement}]`;
}

/** An error's stack frames only: its first lines repeat the message, which may hold the values. */
export function stackFrames(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.stack === undefined) return undefined;
  return error.stack
    .split("\n")
    .filter((line) => line.trimStart().startsWith("at "))
    .join("\n");
}

function isQueryError(error: Error): error is Error & { query: string; params: unknown } {
  const e = error as { query?: unknown; params?: unknown };
  return typeof e.query === "string" && e.params !== undefined;
}

function sqlStateIn(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

const firstLine = (text: string) => {
  const end = text.indexOf("\n");
  return end === -1 ? text : text.slice(0, end);
};

const maskQuoted = (text: string) => text.replace(/"[^"]*"/g, '"…"');

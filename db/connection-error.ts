/**
 * Codes that mean the store could not be reached or dropped the connection, as opposed to a
 * statement it refused: socket errors, postgres.js's own connection errors, and the SQLSTATEs
 * of a server that is down, shutting down, starting up or full.
 */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/** The first code an error, or an error it wraps (as drizzle does), carries that `accept` takes. */
export function errorCodeOf(error: unknown, accept: (code: string) => boolean = () => true): string | null {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && accept(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** The connection-class code an error (or an error it wraps, as drizzle does) carries, or null. */
export function connectionErrorCode(error: unknown): string | null {
  // SQLSTATE class 08: connection exception.
  return errorCodeOf(error, (code) => CONNECTION_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

/** Whether an error means the store is unreachable (retry later), not that a statement failed. */
export function isConnectionError(error: unknown): boolean {
  return connectionErrorCode(error) !== null;
}

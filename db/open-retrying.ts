import { type Database, openDatabase } from "./client";
import { connectionErrorCode } from "./connection-error";

/** A database URL fit for a log line: its password (if any) replaced by `***`. */
export function maskDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: hide whatever sits between the scheme's user and the host.
    return url.replace(/(\/\/[^:/@]*:)[^@]*@/, "$1***@");
  }
  if (parsed.password === "") return url;
  parsed.password = "***";
  return parsed.toString();
}

/** The database stayed unreachable for the whole retry time; the message is one line. */
export class DatabaseUnreachable extends Error {
  constructor(masked: string, retryMs: number, code: string) {
    super(`Could not reach Postgres at DATABASE_URL ${masked} within ${retryMs} ms (SVC_START_RETRY_MS): ${code}`);
  }
}

export interface RetryOptions {
  /** How long to keep trying; 0 tries once. */
  readonly retryMs: number;
  /** Called once, at the first failed attempt, with the masked URL. */
  readonly onWaiting: (maskedUrl: string) => void;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly migrationsFolder?: string;
  /** Told what a slow step of the open is about to do (migrating). */
  readonly onProgress?: (message: string, fields: Record<string, unknown>) => void;
  /** How long an unanswering server is waited for before queries fail at once (`StoreGate`). */
  readonly hangMs?: number;
}

const FIRST_WAIT_MS = 500;
const LONGEST_WAIT_MS = 5_000;

/**
 * Opens (connects and migrates) the Postgres server at `url`, retrying while it cannot be
 * reached (waits double from 0.5 s to at most 5 s) for `retryMs`; then throws DatabaseUnreachable.
 * Any other error (a refused password, a failed migration) is thrown at once.
 */
export async function openDatabaseRetrying(url: string, options: RetryOptions): Promise<Database> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? Bun.sleep;
  const giveUpAt = now() + options.retryMs;
  let wait = FIRST_WAIT_MS;
  let warned = false;
  for (;;) {
    try {
      return await openDatabase({
        url,
        migrationsFolder: options.migrationsFolder,
        onProgress: options.onProgress,
        hangMs: options.hangMs,
      });
    } catch (error) {
      const code = connectionErrorCode(error);
      if (code === null) throw error;
      const left = giveUpAt - now();
      if (left <= 0) throw new DatabaseUnreachable(maskDatabaseUrl(url), options.retryMs, code);
      if (!warned) {
        warned = true;
        options.onWaiting(maskDatabaseUrl(url));
      }
      await sleep(Math.min(wait, left));
      wait = Math.min(wait * 2, LONGEST_WAIT_MS);
    }
  }
}

/** One line for an operator on why the store could not be opened: no stack, no password. */
export function openFailureMessage(url: string, error: unknown): string {
  if (error instanceof DatabaseUnreachable) return error.message;
  let cause = error;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  const reason = (cause instanceof Error ? cause.message : String(cause)).split("\n")[0];
  return `Could not open Postgres at DATABASE_URL ${maskDatabaseUrl(url)}: ${reason}`;
}

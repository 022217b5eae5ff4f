import { connectionErrorCode } from "../../db/connection-error";
import { AppError } from "./errors";

/** How long a request waits for a store read unless configured (SVC_READ_DEADLINE_MS). */
export const DEFAULT_READ_DEADLINE_MS = 1_000;

/** What a client is told to wait before retrying while the store is out. */
const STORE_RETRY_AFTER_SECONDS = 2;

/**
 * The store did not answer a read in time, or could not be reached: 503 `service_unavailable`
 * with Retry-After. `reason` (`deadline` or the connection error's code) is for the log only.
 */
export class StoreUnavailable extends AppError {
  constructor(
    readonly reason: string,
    message = reason === "deadline"
      ? "The store did not answer in time; retry shortly."
      : "The store is unavailable; retry shortly.",
  ) {
    super("service_unavailable", message, undefined, { "retry-after": String(STORE_RETRY_AFTER_SECONDS) });
  }
}

/**
 * Settles as `read` does if it settles within `ms`; otherwise rejects with StoreUnavailable
 * and ignores how `read` ends. For reads only: a write past its deadline may still commit.
 * Its one timer is cleared when the read settles.
 */
export function withinDeadline<T>(read: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreUnavailable("deadline")), ms);
    read.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** A connection-class driver error as StoreUnavailable; null for any other error. */
export function storeUnavailableOf(error: unknown): StoreUnavailable | null {
  if (error instanceof StoreUnavailable) return error;
  const code = connectionErrorCode(error);
  return code === null ? null : new StoreUnavailable(code);
}

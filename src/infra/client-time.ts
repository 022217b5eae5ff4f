import { AppError } from "./errors";

const DAY_MS = 86_400_000;

/** How far before and after the service's clock a client-given time may lie. */
export interface TimeRange {
  readonly pastMs: number;
  readonly futureMs: number;
  /** The rule in words, for the 422's details. */
  readonly rule: string;
}

/**
 * When something happened at the client (a streaming row's `window_end`, an upstream change's
 * `changedAt`): at most ten years back, and at most a day ahead (clock skew, a window that ends
 * later today). A later time would be newer than every honest time to come: one such row would
 * make every later row of the user older, so stale, until that time.
 */
export const EVENT_TIME: TimeRange = {
  pastMs: 3650 * DAY_MS,
  futureMs: DAY_MS,
  rule: "must be within 10 years before and 1 day after the service's clock",
};

/** When something given by an operator ends (a grant's `expiresAt`): ten years back to 100 ahead. */
export const EXPIRY_TIME: TimeRange = {
  pastMs: 3650 * DAY_MS,
  futureMs: 36_500 * DAY_MS,
  rule: "must be within 10 years before and 100 years after the service's clock",
};

/** Whether epoch milliseconds `ms` lie within `range` of `nowMs` (NaN never does). */
export function withinRange(ms: number, nowMs: number, range: TimeRange): boolean {
  return ms >= nowMs - range.pastMs && ms <= nowMs + range.futureMs;
}

/** The 422 of a client-given time outside its range, with its JSON pointer and the rule. */
export const timeOutOfRange = (path: string, range: TimeRange) =>
  new AppError("validation_failed", "The request failed validation.", [{ path, message: range.rule }]);

/** Throws the 422 unless the ISO date-time or epoch milliseconds at `path` lie within `range`. */
export function checkClientTime(value: string | number, nowMs: number, range: TimeRange, path: string): number {
  const ms = typeof value === "number" ? value : Date.parse(value);
  if (!withinRange(ms, nowMs, range)) throw timeOutOfRange(path, range);
  return ms;
}

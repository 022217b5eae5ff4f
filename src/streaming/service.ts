import type { ColumnType, PipelineDefinition } from "../core/document-schema";
import { EVENT_TIME, timeOutOfRange, withinRange } from "../infra/client-time";
import { AppError, notFound } from "../infra/errors";
import type { SiteState } from "../sites/registry";
import { isUserId } from "../users/store";
import type { PendingWrite, StreamingStore, WriteOutcome } from "./store";

/** Most rows one request may carry (spec Limits); more is 413 with nothing written. */
const MAX_ROWS = 1000;
/** Longest value of a `string` column; longer is `type_mismatch`. */
const MAX_STRING_COLUMN = 1024;
/** The latest epoch millisecond a JavaScript date can hold. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** ISO 8601 date-time with seconds and a zone (`Z` or an offset), as `window_end` strings must be. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export type RejectReason =
  | "missing_user_id"
  | "missing_window_end"
  | "unknown_site"
  | "unknown_user"
  | "erased"
  | "stale"
  | "type_mismatch";

export interface StreamingReply {
  received: number;
  rejected: Partial<Record<RejectReason, number>>;
}

export interface StreamingDeps {
  readonly store: StreamingStore;
  /**
   * Drops the written users' values at the site in this process at once, and tells every other
   * process (the statement logged the change; this sends the NOTIFY).
   */
  readonly written: (site: SiteState, userIds: readonly string[]) => Promise<void>;
  readonly now: () => number;
}

const unknownPipeline = () => notFound("Unknown pipeline.");
const tooManyRows = (rows: number) =>
  new AppError("payload_too_large", `A batch carries at most ${MAX_ROWS} rows.`, { maxRows: MAX_ROWS, rows });

/** The pipeline the route writes to: declared at the site's live document with source `organization`. */
export function organizationPipeline(site: SiteState, name: string): PipelineDefinition {
  const pipelines = site.live?.document.pipelines;
  const pipeline = pipelines && Object.hasOwn(pipelines, name) ? pipelines[name] : undefined;
  if (pipeline === undefined || pipeline.source !== "organization") throw unknownPipeline();
  return pipeline;
}

type ParsedRow =
  | RejectReason
  | { readonly userId: string; readonly windowEnd: number; readonly values: Record<string, Scalar | null> };
type Scalar = string | number | boolean;

function fitsType(value: unknown, type: ColumnType): value is Scalar {
  switch (type) {
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return typeof value === "number" && Number.isSafeInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "string":
      return typeof value === "string" && value.length <= MAX_STRING_COLUMN;
  }
}

/** `window_end` in epoch milliseconds; NaN when it is neither form. */
function windowEndOf(value: unknown): number {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0 && value <= MAX_EPOCH_MS ? value : Number.NaN;
  }
  if (typeof value === "string" && ISO_DATE_TIME.test(value)) {
    const ms = Date.parse(value);
    return ms >= 0 && ms <= MAX_EPOCH_MS ? ms : Number.NaN;
  }
  return Number.NaN;
}

/**
 * One row's shape, checked in the documented order: not an object, then a missing `user_id`,
 * a missing `window_end`, then any member of the wrong type (`type_mismatch`). Undeclared
 * members and `site_id` are ignored.
 */
function parseRow(row: unknown, columns: PipelineDefinition["columns"]): ParsedRow {
  if (typeof row !== "object" || row === null || Array.isArray(row)) return "type_mismatch";
  const r = row as Record<string, unknown>;
  const userId = Object.hasOwn(r, "user_id") ? r.user_id : undefined;
  if (userId === undefined || userId === null || userId === "") return "missing_user_id";
  const windowEnd = Object.hasOwn(r, "window_end") ? r.window_end : undefined;
  if (windowEnd === undefined || windowEnd === null || windowEnd === "") return "missing_window_end";
  if (typeof userId !== "string") return "type_mismatch";
  const ms = windowEndOf(windowEnd);
  if (Number.isNaN(ms)) return "type_mismatch";
  const values: Record<string, Scalar | null> = {};
  for (const column in columns) {
    if (!Object.hasOwn(r, column)) continue;
    const value = r[column];
    if (value === null) values[column] = null;
    else if (fitsType(value, columns[column] as ColumnType)) values[column] = value;
    else return "type_mismatch";
  }
  return { userId, windowEnd: ms, values };
}

interface Group {
  /** The latest window_end among the user's rows. */
  windowEnd: number;
  /** Rows at that window, merged in batch order (a later row's member wins). */
  values: Record<string, Scalar | null>;
  /** Rows at the latest window share its outcome. */
  latest: number;
  /** Older rows of the same user: stale once the latest row is applied first. */
  older: number;
}

/**
 * Writes a batch to a pipeline and counts what landed. The batch is resolved per user
 * latest-first: the rows at a user's latest `window_end` are merged in batch order and written
 * as one; the user's older rows are then stale (unless the user is unknown, erased or the site
 * gone, which they share). Everything is written by one statement (store.ts).
 */
export async function writeBatch(
  deps: StreamingDeps,
  site: SiteState,
  pipelineName: string,
  pipeline: PipelineDefinition,
  rows: readonly unknown[],
): Promise<StreamingReply> {
  if (rows.length > MAX_ROWS) throw tooManyRows(rows.length);
  const rejected: Partial<Record<RejectReason, number>> = {};
  const reject = (reason: RejectReason, n = 1) => {
    if (n > 0) rejected[reason] = (rejected[reason] ?? 0) + n;
  };
  const groups = new Map<string, Group>();
  let notUserIds = 0;
  const now = deps.now();
  for (let r = 0; r < rows.length; r++) {
    const parsed = parseRow(rows[r], pipeline.columns);
    if (typeof parsed === "string") {
      reject(parsed);
      continue;
    }
    // One far-future row would make every later row of the user stale until then: the batch is
    // refused whole (nothing written), naming the row.
    if (!withinRange(parsed.windowEnd, now, EVENT_TIME)) throw timeOutOfRange(`/rows/${r}/window_end`, EVENT_TIME);
    // Users are keyed by uuid: any other id names no user (after the site check, below).
    if (!isUserId(parsed.userId)) {
      notUserIds += 1;
      continue;
    }
    const userId = parsed.userId.toLowerCase();
    const group = groups.get(userId);
    if (group === undefined) {
      groups.set(userId, { windowEnd: parsed.windowEnd, values: parsed.values, latest: 1, older: 0 });
    } else if (parsed.windowEnd > group.windowEnd) {
      group.older += group.latest;
      group.windowEnd = parsed.windowEnd;
      group.values = parsed.values;
      group.latest = 1;
    } else if (parsed.windowEnd === group.windowEnd) {
      Object.assign(group.values, parsed.values);
      group.latest += 1;
    } else {
      group.older += 1;
    }
  }

  let received = 0;
  let siteGone = false;
  if (groups.size > 0) {
    const writes: PendingWrite[] = [];
    for (const [userId, g] of groups) writes.push({ userId, windowEnd: g.windowEnd, values: g.values });
    const outcomes = await deps.store.writeBatch(site.tenantId, site.id, pipelineName, writes);
    const landed: string[] = [];
    for (const [userId, g] of groups) {
      const outcome: WriteOutcome = outcomes.has(userId) ? (outcomes.get(userId) as WriteOutcome) : "unknown_user";
      if (outcome === "unknown_site") siteGone = true;
      if (outcome === null) {
        received += g.latest;
        landed.push(userId);
      } else reject(outcome, g.latest);
      reject(outcome === null || outcome === "stale" ? "stale" : outcome, g.older);
    }
    if (landed.length > 0) await deps.written(site, landed);
  }
  reject(siteGone ? "unknown_site" : "unknown_user", notUserIds);
  return { received, rejected };
}

import { type OutsideCalls, UNTRACED } from "../infra/tracing";
import { type JobQueue, RetryAt } from "../jobs/queue";
import type { ServiceConfigs } from "../outside/service-config";
import { type CmsClient, CmsUnavailable, StoryblokCms } from "../outside/storyblok/client";
import type { SiteState } from "../sites/registry";
import { contentNotConfigured } from "./errors";
import { authorName, itemFromStory, versionOf } from "./mapping";
import type { ContentStore } from "./store";

/** The job kind of a CMS re-read. */
export const CONTENT_JOB = "content.reread";

/** The types a re-read processes; any other type is accepted and ignored. */
const PROCESSED = new Set(["story", "author"]);

export interface ContentPayload {
  readonly tenantId: string;
  readonly siteId: string;
  readonly type: "story" | "author";
  readonly id: string;
}

export interface ContentDeps {
  readonly services: ServiceConfigs;
  readonly store: ContentStore;
  readonly jobs: JobQueue;
  readonly now: () => number;
  readonly cmsTimeoutMs: number;
  /** How reads of the CMS are traced (UNTRACED when tracing is off). */
  readonly outside?: OutsideCalls;
}

/** One job per (tenant, site, type, id): notices of one item collapse into one re-read. */
function contentKey(tenantId: string, siteId: string, type: string, id: string): string {
  return JSON.stringify([tenantId, siteId, type, id]);
}

/** The prefix every content job key of one site starts with. */
export function siteKeyPrefix(tenantId: string, siteId: string): string {
  return `${JSON.stringify([tenantId, siteId]).slice(0, -1)},`;
}

/**
 * `POST /v1/content/sync`: owes one re-read per (type, id) of a processed type; answers once
 * they are enqueued. A tenant without a CMS is 503 (not configured) when there is anything to
 * read, so the caller learns it instead of the notices piling up.
 */
export async function syncContent(
  deps: ContentDeps,
  site: SiteState,
  events: readonly { id: string; type?: string }[],
): Promise<{ success: true }> {
  const wanted = events
    .map((e) => ({ id: e.id, type: e.type ?? "story" }))
    .filter((e): e is { id: string; type: "story" | "author" } => PROCESSED.has(e.type));
  if (wanted.length === 0) return { success: true };
  const resolved = await deps.services.resolve(site.tenantId, "storyblok");
  if (!resolved.configured) throw contentNotConfigured();
  await deps.jobs.enqueue(
    CONTENT_JOB,
    wanted.map((e) => {
      const payload: ContentPayload = { tenantId: site.tenantId, siteId: site.id, type: e.type, id: e.id };
      return { key: contentKey(site.tenantId, site.id, e.type, e.id), payload };
    }),
  );
  return { success: true };
}

/**
 * One re-read (the job's run). A story found is stored (with its authors' known names), a 404
 * marks it deleted; an author found renames it on the site's items. An older answer than the
 * one stored changes nothing. The CMS down, slow or rate-limiting throws: retried with backoff.
 */
async function rereadContent(deps: ContentDeps, payload: ContentPayload): Promise<void> {
  const cms = await cmsOf(deps, payload.tenantId);
  const readAt = deps.now();
  let read: Awaited<ReturnType<CmsClient["readStory"]>>;
  try {
    read = await cms.readStory(payload.id);
  } catch (error) {
    if (error instanceof CmsUnavailable && error.retryAfterMs !== null)
      throw new RetryAt(error.message, error.retryAfterMs);
    throw error;
  }
  const { tenantId, siteId, id } = payload;
  if (payload.type === "author") {
    // A deleted author keeps the name the items last showed.
    if (!read.found) return;
    await deps.store.putAuthor(tenantId, siteId, id, authorName(read.story), versionOf(read.story, read.cv, readAt));
    return;
  }
  if (!read.found) {
    await deps.store.markDeleted(tenantId, siteId, id, readAt, readAt);
    return;
  }
  const draft = itemFromStory(id, read.story, read.cv, readAt, new Map());
  const names = await deps.store.authorNames(
    tenantId,
    siteId,
    draft.authors.map((a) => a.id),
  );
  await deps.store.put(tenantId, siteId, itemFromStory(id, read.story, read.cv, readAt, names));
}

async function cmsOf(deps: ContentDeps, tenantId: string): Promise<CmsClient> {
  const resolved = await deps.services.resolve(tenantId, "storyblok");
  if (!resolved.configured) throw new Error(resolved.reason);
  return new StoryblokCms(resolved.config, deps.cmsTimeoutMs, deps.now, (deps.outside ?? UNTRACED).fetch("storyblok"));
}

/** Registers the re-read job kind on the queue. */
export function registerContentJobs(deps: ContentDeps, debounceMs: number): void {
  deps.jobs.register(CONTENT_JOB, (payload) => rereadContent(deps, payload as ContentPayload), {
    debounceMs,
    maxAttempts: 8,
    backoffMs: 5_000,
    maxBackoffMs: 15 * 60_000,
    leaseMs: 60_000,
  });
}

import { type OutsideCalls, UNTRACED } from "../infra/tracing";
import { type JobQueue, RetryAt } from "../jobs/queue";
import { ListmonkVendor, type NewsletterVendor, VendorUnavailable } from "../outside/listmonk/client";
import type { ServiceConfigs } from "../outside/service-config";
import type { ServiceConfig } from "../outside/service-config-model";
import type { SiteRegistry } from "../sites/registry";
import type { UserStore } from "../users/store";
import { deployedLists } from "./lists";
import type { UnsubscribeTokens } from "./mail";
import { effectiveStatus, type NewsletterStore } from "./store";

/** What the vendor sync reads of the newsletter deps (deps.ts builds them and registers the job). */
export interface SyncDeps {
  readonly store: NewsletterStore;
  readonly services: ServiceConfigs;
  readonly jobs: JobQueue;
  readonly users: UserStore;
  readonly registry: SiteRegistry;
  readonly unsubscribeTokens: UnsubscribeTokens;
  readonly now: () => number;
  /** The service-wide origin for the unsubscribe URL when the tenant has none: SVC_PUBLIC_URL. */
  readonly publicUrl: string | undefined;
  readonly vendorTimeoutMs: number;
  /** The vendor's list ids by its URL and user, learned once per process (`vendorOf`). */
  readonly vendorLists: Map<string, Map<string, number>>;
  /** How calls to the vendor are traced (UNTRACED when tracing is off). */
  readonly outside?: OutsideCalls;
}

/** The job kind of a vendor sync of one (list, user). */
export const SYNC_JOB = "newsletters.sync";

export interface SyncPayload {
  readonly tenantId: string;
  readonly userId: string;
  readonly listId: string;
}

/** One job per (tenant, list, user): changes of one standing collapse into one sync. */
function syncKey(tenantId: string, listId: string, userId: string): string {
  return JSON.stringify([tenantId, listId, userId]);
}

/**
 * Owes the vendor a sync of each changed standing, when the tenant has a vendor: with none, the
 * standings are kept and nothing is queued. The job reads the standing when it runs, so it is
 * idempotent and a burst of changes sends only the last.
 */
export async function enqueueSync(
  deps: Pick<SyncDeps, "services" | "jobs">,
  tenantId: string,
  userId: string,
  listIds: readonly string[],
): Promise<void> {
  if (listIds.length === 0) return;
  if (!(await deps.services.resolve(tenantId, "listmonk")).configured) return;
  await deps.jobs.enqueue(
    SYNC_JOB,
    listIds.map((listId) => {
      const payload: SyncPayload = { tenantId, userId, listId };
      return { key: syncKey(tenantId, listId, userId), payload };
    }),
  );
}

function vendorOf(deps: SyncDeps, config: ServiceConfig<"listmonk">): NewsletterVendor {
  const byUrl = deps.vendorLists;
  const key = `${config.url}\u0001${config.username}`;
  let lists = byUrl.get(key);
  if (lists === undefined) {
    lists = new Map();
    byUrl.set(key, lists);
  }
  return new ListmonkVendor(config, deps.vendorTimeoutMs, lists, (deps.outside ?? UNTRACED).fetch("listmonk"));
}

/**
 * One sync (the job's run). Only `subscribed` is ever sent: a standing that is subscribed and
 * not yet held by the vendor is pushed (address, name, the one-click unsubscribe URL); one that
 * is no longer subscribed is unsubscribed at the vendor by the vendor's own subscriber id, and
 * only if the vendor was told it was subscribed. A `pending` address never reaches the vendor.
 * The vendor down or slow throws: retried with backoff (its Retry-After when it gives one).
 */
async function runSync(deps: SyncDeps, payload: SyncPayload): Promise<void> {
  const resolved = await deps.services.resolve(payload.tenantId, "listmonk");
  if (!resolved.configured) return;
  const [row] = await deps.store.standings(payload.tenantId, payload.userId, [payload.listId]);
  if (row === undefined) return;
  const status = effectiveStatus(row, deps.now());
  const vendor = vendorOf(deps, resolved.config);
  try {
    if (status === "subscribed") {
      if (row.vendorStatus === "subscribed") return;
      const user = await deps.users.userById(payload.tenantId, payload.userId);
      if (!user || user.erasedAt !== null) return;
      const site = deps.registry.site(payload.tenantId, row.siteId);
      const list = site === undefined ? undefined : deployedLists(site).find((l) => l.id === payload.listId);
      const vendorListId = await vendor.ensureList(payload.listId, list?.label ?? payload.listId);
      const base = deps.registry.publicUrl(payload.tenantId) ?? deps.publicUrl;
      const attribs: Record<string, unknown> = {};
      if (base !== undefined && list !== undefined) {
        const url = await deps.unsubscribeTokens.url(`${base}/v1`, {
          tenantId: payload.tenantId,
          siteId: row.siteId,
          userId: payload.userId,
          listId: payload.listId,
          now: deps.now(),
        });
        attribs.svc_unsubscribe = { [list.slug]: url };
      }
      const name = user.name ?? ([user.firstName, user.lastName].filter(Boolean).join(" ") || user.email);
      const subscriberId = await vendor.subscribe({ email: user.email, name, attribs }, vendorListId);
      await deps.store.setVendorState(payload.tenantId, payload.userId, payload.listId, "subscribed", subscriberId);
      return;
    }
    if (row.vendorStatus !== "subscribed" || row.vendorSubscriberId === null) return;
    const site = deps.registry.site(payload.tenantId, row.siteId);
    const label = (site === undefined ? [] : deployedLists(site)).find((l) => l.id === payload.listId)?.label;
    const vendorListId = await vendor.ensureList(payload.listId, label ?? payload.listId);
    await vendor.unsubscribe(row.vendorSubscriberId, vendorListId);
    await deps.store.setVendorState(
      payload.tenantId,
      payload.userId,
      payload.listId,
      "unsubscribed",
      row.vendorSubscriberId,
    );
  } catch (error) {
    if (error instanceof VendorUnavailable && error.retryAfterMs !== null) {
      throw new RetryAt(error.message, error.retryAfterMs);
    }
    throw error;
  }
}

/** Registers the sync job kind on the queue. */
export function registerSyncJob(deps: SyncDeps): void {
  deps.jobs.register(SYNC_JOB, (payload) => runSync(deps, payload as SyncPayload), {
    debounceMs: 0,
    maxAttempts: 12,
    backoffMs: 5_000,
    maxBackoffMs: 30 * 60_000,
    leaseMs: 60_000,
  });
}

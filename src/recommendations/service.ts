import type { Static } from "elysia";
import type { ContentItem } from "../content/mapping";
import type { ContentStore } from "../content/store";
import { validationError } from "../http/error-envelope";
import { errorText } from "../infra/error-text";
import { AppError } from "../infra/errors";
import { type OutsideCalls, UNTRACED } from "../infra/tracing";
import type { Logger } from "../logger";
import { EngineFailure, RecombeeEngine, type RecommendationEngine } from "../outside/recombee/client";
import type { ServiceConfigs } from "../outside/service-config";
import type { SiteState } from "../sites/registry";
import type { RecommendationsQuery, RecommendationsReply } from "./model";
import { composeFilter, type FeedFilters } from "./reql";
import type { UsageStore } from "./store";

export type Query = Static<typeof RecommendationsQuery>;
export type Reply = Static<typeof RecommendationsReply>;

const DEFAULT_COUNT = 5;
/** The engine is asked for this many times `count`: deleted or unknown items are dropped after. */
const OVERASK = 2;
const MAX_LIST_VALUES = 50;
const RETRY_AFTER_SECONDS = "5";

export interface RecommendationDeps {
  readonly services: ServiceConfigs;
  readonly content: ContentStore;
  readonly usage: UsageStore;
  readonly logger: Logger;
  readonly now: () => number;
  readonly timeoutMs: number;
  /** How calls to the engine are traced (UNTRACED when tracing is off). */
  readonly outside?: OutsideCalls;
}

const EMPTY: Reply = Object.freeze({ recommId: null, items: [] }) as unknown as Reply;

/**
 * Recommendations for one subject at one site. No subject: an empty answer and no engine call.
 * Otherwise one engine call (counted against the tenant's quota, failed or not), then the ids
 * hydrated from the site's content items: an id the site has no live item for (another site's,
 * deleted, never read) is left out, best first kept.
 */
export async function recommend(
  deps: RecommendationDeps,
  site: SiteState,
  subject: string | null,
  query: Query,
): Promise<Reply> {
  const filters = filtersOf(query);
  if (subject === null) return EMPTY;
  const engine = await engineOf(deps, site.tenantId);
  const count = query.count ?? DEFAULT_COUNT;
  const ask = {
    subject,
    count: Math.min(50, count * OVERASK),
    scenario: query.scenario,
    filter: composeFilter(filters),
    itemId: query.itemId,
  };
  const [answer] = await Promise.allSettled([
    engine.recommend(ask),
    deps.usage.countCall(site.tenantId, deps.now()).catch((error) => {
      deps.logger.warn("recommendation call not counted", { tenant: site.tenantId, error: errorText(error) });
    }),
  ]);
  if (answer.status === "rejected") {
    const failure = answer.reason;
    if (failure instanceof EngineFailure && failure.kind === "unknown_item") return EMPTY;
    throw appErrorOf(failure);
  }
  const { recommId, itemIds } = answer.value;
  const items = await deps.content.liveItems(site.tenantId, site.id, itemIds);
  const byId = new Map(items.map((i) => [i.id, i]));
  const out: Reply["items"] = [];
  for (const id of itemIds) {
    const item = byId.get(id);
    if (item === undefined || item.url === null) continue;
    out.push(recommendedItem(item, recommId));
    if (out.length === count) break;
  }
  return { recommId, items: out };
}

function recommendedItem(item: ContentItem, recommId: string): Reply["items"][number] {
  return {
    id: item.id,
    headline: item.headline ?? "",
    description: item.description ?? "",
    image: item.image ?? "",
    url: withRecommId(item.url ?? "", recommId),
    publishedAt: item.publishedAt,
  };
}

/** The item's canonical URL with `recomm_id` set (a path stays a path). */
function withRecommId(url: string, recommId: string): string {
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(url);
  const parsed = new URL(url, "http://relative.invalid");
  parsed.searchParams.set("recomm_id", recommId);
  return absolute ? parsed.toString() : `${parsed.pathname}${parsed.search}${parsed.hash}`;
}

async function engineOf(deps: RecommendationDeps, tenantId: string): Promise<RecommendationEngine> {
  const resolved = await deps.services.resolve(tenantId, "recombee");
  if (!resolved.configured) throw notConfigured();
  try {
    return new RecombeeEngine(resolved.config, deps.timeoutMs, deps.outside ?? UNTRACED);
  } catch {
    // The client refuses an unknown region (or a region with a base URI): not usable as set.
    throw new AppError("service_unavailable", "The recommendation engine's settings are not usable (region).");
  }
}

/** 503 without Retry-After: no engine is configured for the tenant. */
function notConfigured(): AppError {
  return new AppError("service_unavailable", "Recommendations are not configured for this tenant.");
}

function appErrorOf(failure: unknown): AppError {
  if (failure instanceof EngineFailure) {
    switch (failure.kind) {
      case "unknown_scenario":
        return new AppError("validation_failed", "Unknown scenario.", [
          { path: "/scenario", message: "unknown scenario" },
        ]);
      case "invalid":
        return new AppError("validation_failed", "The recommendation engine refused the request.");
      case "refused":
        return new AppError("service_unavailable", "The recommendation engine refused this tenant's credentials.");
      default:
        break;
    }
  }
  return new AppError("service_unavailable", "The recommendation engine could not be reached.", undefined, {
    "retry-after": RETRY_AFTER_SECONDS,
  });
}

/** The query's feed filters, checked (422 with the failing parameter). */
function filtersOf(query: Query): FeedFilters {
  const errors: { path: string; message: string }[] = [];
  const listOf = (name: keyof Query): string[] | undefined => {
    const raw = query[name];
    if (typeof raw !== "string") return undefined;
    const values = [
      ...new Set(
        raw
          .split(",")
          .map((v) => v.trim())
          .filter((v) => v !== ""),
      ),
    ];
    if (values.length > MAX_LIST_VALUES || values.some((v) => v.length > 200))
      errors.push({ path: `/${name}`, message: `at most ${MAX_LIST_VALUES} values of at most 200 characters` });
    return values.length === 0 ? undefined : values;
  };
  const instantOf = (name: "publishedAfter" | "publishedBefore"): number | undefined => {
    const raw = query[name];
    if (raw === undefined) return undefined;
    const ms = Date.parse(raw);
    if (Number.isNaN(ms)) errors.push({ path: `/${name}`, message: "must be an ISO 8601 date-time" });
    return Number.isNaN(ms) ? undefined : ms;
  };
  const filters: FeedFilters = {
    sections: listOf("sections"),
    tags: listOf("tags"),
    authors: listOf("authors"),
    types: listOf("types"),
    excludeSections: listOf("excludeSections"),
    excludeTags: listOf("excludeTags"),
    excludeTypes: listOf("excludeTypes"),
    languages: listOf("languages"),
    publishedAfter: instantOf("publishedAfter"),
    publishedBefore: instantOf("publishedBefore"),
    excludeViewed: query.excludeViewed === "true",
  };
  if (errors.length > 0) throw validationError(errors);
  return filters;
}

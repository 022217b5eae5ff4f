import { AppError } from "../infra/errors";
import type { FieldReader, HotRequest } from "../infra/hot-request";
import type { SiteRegistry, SiteState } from "../sites/registry";
import { readSiteId, SITE_HEADER, servedSite, tenantOf } from "../sites/selection";
import type { ApiKey, KeyService } from "./service";

const missingKey = () => new AppError("unauthorized", "Missing API key.");
const invalidKey = () => new AppError("unauthorized", "Invalid or missing API key.");
const wrongSite = () => new AppError("forbidden", "This key is not pinned to the selected site.");
const lacksPermission = (permission: string) => new AppError("forbidden", `This key does not hold ${permission}.`);

/** The key value from `Authorization: Bearer` or `x-api-key`; a cookie is never read here. */
function presentedKey(headers: FieldReader): string | null {
  const auth = headers.get("authorization");
  if (auth !== null) {
    if (auth.length > 7 && auth.slice(0, 7).toLowerCase() === "bearer ") return auth.slice(7).trim();
    return "";
  }
  return headers.get("x-api-key");
}

export interface KeyGuardDeps {
  readonly keys: KeyService;
  readonly registry: SiteRegistry;
  readonly now: () => number;
}

export type KeyedRequest = {
  readonly apiKey: ApiKey;
  readonly site: SiteState;
};

export interface KeyGuardOptions {
  /** A permission the route needs, e.g. streaming:write. */
  readonly permission?: string;
  /** Accept a key pinned to any site of the tenant (upstream pushes). */
  readonly anySiteOfTenant?: boolean;
  /**
   * The site is the key's pin (streaming writes): no site header is needed; one that names
   * another site is refused like a wrong pin (403).
   */
  readonly siteFromKey?: boolean;
  /**
   * One more header that may carry the key, read only when neither `Authorization` nor
   * `x-api-key` is sent (`apikey`, which standard Iglu resolvers send: only the /v1/iglu routes).
   */
  readonly keyHeader?: string;
}

/**
 * Authenticates a key-only request, in the spec's order: site header (400), key present
 * (401 Missing), key active (401 Invalid), key pinned to the selected site (403), site
 * served (404), permission (403). Counts the request against the key when it passes.
 * Synchronous (no promise at all) when the key is held in memory, as on the hot path.
 */
export function authenticateKeyed(
  deps: KeyGuardDeps,
  request: HotRequest,
  options: KeyGuardOptions = {},
): KeyedRequest | Promise<KeyedRequest> {
  const headers = request.headers;
  const siteId = options.siteFromKey ? headers.get(SITE_HEADER) : readSiteId(headers);
  const value = presentedKey(headers) ?? (options.keyHeader === undefined ? null : headers.get(options.keyHeader));
  if (value === null) throw missingKey();
  if (value === "") throw invalidKey();
  const now = deps.now();
  const found = deps.keys.authenticate(value, now);
  if (found instanceof Promise) return found.then((apiKey) => admit(deps, request, siteId, apiKey, now, options));
  return admit(deps, request, siteId, found, now, options);
}

function admit(
  deps: KeyGuardDeps,
  request: HotRequest,
  siteId: string | null,
  apiKey: ApiKey | null,
  now: number,
  options: KeyGuardOptions,
): KeyedRequest {
  const tenantId = tenantOf(deps.registry, request);
  if (!apiKey || apiKey.tenantId !== tenantId) throw invalidKey();
  // Upstream pushes take a key of any of the tenant's sites; the tenant check above holds.
  if (
    options.siteFromKey
      ? siteId !== null && siteId !== apiKey.siteId
      : !options.anySiteOfTenant && apiKey.siteId !== siteId
  )
    throw wrongSite();
  const site = servedSite(deps.registry, tenantId, options.siteFromKey ? apiKey.siteId : (siteId as string));
  if (options.permission && !apiKey.permissions.includes(options.permission)) throw lacksPermission(options.permission);
  deps.keys.recordUse(apiKey, now);
  return { apiKey, site };
}

import { AppError } from "../infra/errors";
import type { FieldReader, HotRequest } from "../infra/hot-request";
import type { SiteRegistry, SiteState } from "./registry";

export const SITE_HEADER = "x-svc-site-id";

const missingSiteHeader = () =>
  new AppError("bad_request", "The x-svc-site-id header is required: a site id of 1 to 128 characters.");

const unknownSite = () => new AppError("not_found", "Unknown site.");

/** The selected site id: the header, else (only where a route allows it) a fallback. */
export function readSiteId(headers: FieldReader, fallback?: string | null): string {
  const value = headers.get(SITE_HEADER) ?? fallback ?? null;
  if (value === null || value.length < 1 || value.length > 128) throw missingSiteHeader();
  return value;
}

/** The tenant a request reached, by its Host header; null when no tenant answers it. */
export function tenantOf(registry: SiteRegistry, request: HotRequest): string | null {
  // With no host names bound, the default tenant answers every request: no header to read.
  if (!registry.hasHostNames()) return registry.tenantForHost(null);
  return registry.tenantForHost(request.headers.get("host") ?? hostOfUrl(request.url));
}

function hostOfUrl(url: string): string | null {
  const start = url.indexOf("//") + 2;
  const end = url.indexOf("/", start);
  return start > 1 ? url.slice(start, end === -1 ? undefined : end) : null;
}

/** A site that exists, is enabled and has a live document; otherwise 404 "Unknown site.". */
export function servedSite(registry: SiteRegistry, tenantId: string | null, siteId: string): SiteState {
  const site = tenantId === null ? undefined : registry.site(tenantId, siteId);
  if (!site || site.disabled || !site.live) throw unknownSite();
  return site;
}

/** The served site a request selects: header (or an allowed fallback), tenant by Host. */
export function selectedSite(registry: SiteRegistry, request: Request, fallback?: string | null): SiteState {
  const siteId = readSiteId(request.headers, fallback);
  return servedSite(registry, tenantOf(registry, request), siteId);
}

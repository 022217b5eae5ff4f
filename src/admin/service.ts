import type { ChangeFeed } from "../changes/change-feed";
import { validateSiteDocument } from "../core/document";
import { isStorableText, UNSTORABLE_TEXT } from "../core/text";
import { AppError } from "../infra/errors";
import type { SiteStore } from "../sites/store";

/** What tenant and site changes need: the store, and the feed every process hears them on. */
export interface AdminServiceDeps {
  readonly siteStore: SiteStore;
  readonly changes: ChangeFeed;
  readonly now: () => number;
}

/**
 * A tenant's public URL as the origin it names (`https://id.news.example`, no trailing slash):
 * http or https, a host, no path, query, fragment or credentials; else 422.
 */
export function publicOrigin(value: string): string {
  const url = URL.parse(value);
  if (
    url === null ||
    (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.hostname === "" ||
    url.username !== "" ||
    url.password !== "" ||
    url.pathname !== "/" ||
    url.search !== "" ||
    url.hash !== ""
  ) {
    throw new AppError("validation_failed", "The request failed validation.", [
      { path: "/publicUrl", message: "must be an http(s) origin without a path, e.g. https://id.news.example" },
    ]);
  }
  return url.origin;
}

export async function createTenant(
  deps: AdminServiceDeps,
  input: { id: string; hosts?: string[]; default?: boolean; publicUrl?: string },
) {
  const hosts = [...new Set((input.hosts ?? []).map((h) => h.toLowerCase()))];
  const publicUrl = input.publicUrl === undefined ? null : publicOrigin(input.publicUrl);
  const result = await deps.siteStore.createTenant(input.id, hosts, input.default ?? false, publicUrl);
  if (result === "exists") throw new AppError("conflict", "A tenant with that id already exists.");
  if (result === "host_taken") throw new AppError("conflict", "One of those hosts already belongs to a tenant.");
  await deps.changes.publish({ topic: "tenant", tenantId: input.id, subject: input.id });
  return { id: input.id, hosts, default: input.default ?? false, publicUrl };
}

/** Sets (or clears, with null) the origin the tenant's mailed links are built on. */
export async function setPublicUrl(deps: AdminServiceDeps, tenantId: string, value: string | null) {
  const publicUrl = value === null ? null : publicOrigin(value);
  if (!(await deps.siteStore.setPublicUrl(tenantId, publicUrl))) throw new AppError("not_found", "Unknown tenant.");
  await deps.changes.publish({ topic: "tenant", tenantId, subject: tenantId });
  return { tenant: tenantId, publicUrl };
}

export async function createSite(deps: AdminServiceDeps, tenantId: string, siteId: string) {
  const result = await deps.siteStore.createSite(tenantId, siteId);
  if (result === "no_tenant") throw new AppError("not_found", "Unknown tenant.");
  if (result === "exists") throw new AppError("conflict", "A site with that id already exists in this tenant.");
  await deps.changes.publish({ topic: "site", tenantId, subject: siteId });
  return { id: siteId, tenant: tenantId, disabled: false, liveVersion: null, previewVersion: null };
}

export async function requireSite(deps: AdminServiceDeps, tenantId: string, siteId: string) {
  const [site] = await deps.siteStore.loadSites({ tenantId, siteId });
  if (!site) throw new AppError("not_found", "Unknown site.");
  return site;
}

/**
 * Validates (schema + semantic checks), stores a new version and tells every process to swap
 * to it. An invalid document is refused with the failing JSON paths and changes nothing.
 * `source` is the text `document` was parsed from, kept as its author wrote it; without one the
 * document is kept as given (its members in the order they arrived, two-space indented).
 */
export async function deploySite(
  deps: AdminServiceDeps,
  tenantId: string,
  siteId: string,
  document: unknown,
  preview: boolean,
  source?: string,
) {
  await requireSite(deps, tenantId, siteId);
  const checked = validateSiteDocument(document);
  if (!checked.ok) throw new AppError("validation_failed", "The site document is invalid.", checked.errors);
  const stage = preview ? "preview" : "live";
  const text = source ?? JSON.stringify(document, null, 2);
  const version = await deps.siteStore.storeDocument(tenantId, siteId, checked.document, stage, text, deps.now());
  await deps.changes.publish({ topic: "site", tenantId, subject: siteId });
  return { site: siteId, tenant: tenantId, version, stage };
}

/**
 * A deploy body's document: `document` as JSON, or `source`, the document's text as its author
 * wrote it (parsed here; kept as sent). Exactly one of the two; else 422 at the member's path.
 */
export function documentOfBody(body: { document?: unknown; source?: string }): { document: unknown; source?: string } {
  const invalid = (path: string, message: string) =>
    new AppError("validation_failed", "The request failed validation.", [{ path, message }]);
  if (body.source === undefined) {
    if (body.document === undefined) throw invalid("/document", "send the document, or its text as source");
    return { document: body.document };
  }
  if (body.document !== undefined) throw invalid("/source", "send the document or its text as source, not both");
  if (!isStorableText(body.source)) throw invalid("/source", UNSTORABLE_TEXT);
  try {
    return { document: JSON.parse(body.source), source: body.source };
  } catch (error) {
    throw invalid("/source", `not JSON: ${(error as Error).message}`);
  }
}

/** Disables (or enables again) a site: a disabled site answers 404 "Unknown site." everywhere. */
export async function setSiteDisabled(deps: AdminServiceDeps, tenantId: string, siteId: string, disabled: boolean) {
  if (!(await deps.siteStore.setDisabled(tenantId, siteId, disabled))) throw new AppError("not_found", "Unknown site.");
  await deps.changes.publish({ topic: "site", tenantId, subject: siteId });
  return { id: siteId, tenant: tenantId, disabled };
}

/** Connects (or disconnects, with null) a tenant's upstream identity provider. */
export async function setIdentityProvider(
  deps: AdminServiceDeps,
  tenantId: string,
  idp: { issuer: string; jwksUrl: string } | null,
) {
  if (!(await deps.siteStore.setIdentityProvider(tenantId, idp))) throw new AppError("not_found", "Unknown tenant.");
  await deps.changes.publish({ topic: "tenant", tenantId, subject: tenantId });
  return { tenant: tenantId, identityProvider: idp };
}

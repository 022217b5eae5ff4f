import { Elysia } from "elysia";
import { SiteParams } from "../admin/model";
import { AppError } from "../infra/errors";
import type { SiteRegistry, SiteState } from "../sites/registry";
import { AdminGiftParams, AttributionReply, RevokeGiftReply } from "./model";
import { type GiftDeps, giftAttribution, revokeGift } from "./service";

/** The operator gift routes' deps: the gift service's, and the registry for the site in the path. */
export interface AdminGiftRouteDeps extends GiftDeps {
  readonly registry: SiteRegistry;
}

/** Operator routes for gift links (inside the /admin group): revoke any link, attribution report. */
export function adminGiftRoutes(deps: AdminGiftRouteDeps) {
  const siteOf = (tenant: string, site: string): SiteState => {
    const state = deps.registry.site(tenant, site);
    if (state === undefined) throw new AppError("not_found", "Unknown site.");
    return state;
  };
  return new Elysia()
    .get(
      "/tenants/:tenant/sites/:site/gift-links/report",
      ({ params }) => giftAttribution(deps, siteOf(params.tenant, params.site)),
      { params: SiteParams, response: { 200: AttributionReply } },
    )
    .post(
      "/tenants/:tenant/sites/:site/gift-links/:gift/revoke",
      ({ params }) => revokeGift(deps, siteOf(params.tenant, params.site), params.gift, null),
      { params: AdminGiftParams, response: { 200: RevokeGiftReply } },
    );
}

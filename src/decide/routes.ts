import type { CompiledSite } from "../core/compile";
import type { Deps } from "../deps";
import { keyedRoutes } from "../http/key-guard";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { DecideBody } from "./model";
import { decide, takeRate } from "./service";

/**
 * The staged document under a valid preview token for this site; otherwise, silently, live.
 * The token is only verified when one is sent, so ordinary calls pay nothing for it.
 */
export async function chooseDocument(
  deps: Pick<Deps, "previewTokens">,
  site: SiteState,
  token: string | null,
  now: number,
): Promise<{ document: CompiledSite; preview: boolean }> {
  const live = site.live as CompiledSite;
  if (token === null || site.preview === null) return { document: live, preview: false };
  const valid = await deps.previewTokens.verify(token, site.tenantId, site.id, now);
  return valid ? { document: site.preview, preview: true } : { document: live, preview: false };
}

/** POST /v1/decide: the keyed, server-to-server decision route. */
export function keyedDecideRoutes(deps: Deps) {
  const decideDeps = { meters: deps.meters, userFacts: deps.userFacts, igluVendor: deps.config.igluVendor };
  return keyedRoutes(deps).post(
    "/decide",
    async ({ body, apiKey, site, request }) => {
      const now = deps.now();
      takeRate(deps.keyedDecideRate, apiKey.id, now);
      const { document, preview } = await chooseDocument(deps, site, request.headers.get(PREVIEW_HEADER), now);
      return decide(decideDeps, { site, document, preview, input: body, userId: body.userId ?? null, now });
    },
    { body: DecideBody },
  );
}

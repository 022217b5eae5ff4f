import { Elysia, t } from "elysia";
import { SiteParams } from "../admin/model";
import type { CompiledSite } from "../core/compile";
import type { SiteRegistry } from "../sites/registry";
import { servedSite } from "../sites/selection";
import type { DecisionEngine } from "./engine";
import { checkSubjects, DecideBody } from "./model";

/** POST /admin/tenants/:tenant/sites/:site/explain: the operator's explain (`npm run svc -- explain`), no key, no rate window. */
export function adminExplainRoutes(deps: {
  readonly registry: SiteRegistry;
  readonly decisions: DecisionEngine;
  readonly now: () => number;
}) {
  return new Elysia().post(
    "/tenants/:tenant/sites/:site/explain",
    async ({ params, body, query }) => {
      const site = servedSite(deps.registry, params.tenant, params.site);
      checkSubjects(body);
      const staged = query.preview === "true" && site.preview !== null;
      const document = (staged ? site.preview : site.live) as CompiledSite;
      const json = await deps.decisions.explainJson({
        site,
        document,
        preview: staged,
        input: body,
        userId: body.userId ?? null,
        now: deps.now(),
      });
      return new Response(json, { headers: { "content-type": "application/json" } });
    },
    {
      params: SiteParams,
      body: DecideBody,
      query: t.Object({ preview: t.Optional(t.Union([t.Literal("true"), t.Literal("false")])) }),
    },
  );
}

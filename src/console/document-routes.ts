import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import {
  authoredText,
  contentKeysOf,
  diffAgainstLive,
  documentVersion,
  listDocuments,
  normalisedText,
  publishVersion,
  rotateContentKey,
} from "../admin/documents";
import { deploySite, requireSite } from "../admin/service";
import type { CompiledSite } from "../core/compile";
import { validateSiteDocument } from "../core/document";
import type { DecisionEngine } from "../decide/engine";
import { checkSubjects, DecideBody, type DecideInput } from "../decide/model";
import { replayImpact } from "../impact/replay";
import type { ImpactSamples } from "../impact/samples";
import { AppError } from "../infra/errors";
import type { PreviewTokens } from "../preview/tokens";
import { servedSite } from "../sites/selection";
import { audited, signedIn } from "./guard";
import { htmlResponse } from "./http";
import { CONSOLE_PATH, type ConsoleSession } from "./model";
import { type DocumentsView, documentsPage } from "./pages/documents";
import { impactPage } from "./pages/impact";
import type { FieldError } from "./pages/layout";
import type { ConsoleDeps } from "./service";
import { siteParam } from "./site-routes";

const NO_PARSE = { parse: "none" } as const;
const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** A typed JSON text as a value, or the parse error at the document's root. */
function parsed(text: string, path = "/"): { value: unknown } | { errors: FieldError[] } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { errors: [{ path, message: `not JSON: ${(error as Error).message}` }] };
  }
}

/** Documents (validate, diff, stage, preview, publish, roll back) and the impact replay. */
export interface ConsoleDocumentDeps extends ConsoleDeps {
  readonly previewTokens: PreviewTokens;
  readonly impact: Pick<ImpactSamples, "samplesOf">;
  readonly decisions: DecisionEngine;
}

export function consoleDocumentRoutes(deps: ConsoleDocumentDeps) {
  const engine = deps.decisions;

  /** The page's state from the store, with what the request adds (results, the posted text). */
  async function view(s: ConsoleSession, site: string, extra: Partial<DocumentsView> = {}): Promise<DocumentsView> {
    const listed = await listDocuments(deps, s.tenantId, site);
    let text = extra.text;
    if (text === undefined) {
      const current = listed.previewVersion ?? listed.liveVersion;
      text = current === null ? "" : authoredText(await documentVersion(deps, s.tenantId, site, current));
    }
    return {
      site,
      liveVersion: listed.liveVersion,
      previewVersion: listed.previewVersion,
      history: listed.documents,
      contentKeys: (await contentKeysOf(deps, s.tenantId, site)).contentKeys,
      ...extra,
      text,
    };
  }

  return new Elysia({ prefix: CONSOLE_PATH })
    .get(
      "/sites/:site/documents",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s) => {
          const site = siteParam(params.site);
          const raw = new URL(request.url).searchParams.get("version");
          let viewed: DocumentsView["viewed"];
          if (raw !== null) {
            if (!/^[1-9]\d{0,8}$/.test(raw)) throw new AppError("not_found", "Unknown document version.");
            const found = await documentVersion(deps, s.tenantId, site, Number(raw));
            viewed = { version: found.version, text: authoredText(found), normalised: normalisedText(found.document) };
          }
          return htmlResponse(documentsPage(s, await view(s, site, viewed ? { viewed } : {})));
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/documents",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s, form) => {
          const site = siteParam(params.site);
          await requireSite(deps, s.tenantId, site);
          const text = form?.get("document") ?? "";
          const op = form?.get("op");
          const show = async (extra: Partial<DocumentsView>, status = 200) =>
            htmlResponse(documentsPage(s, await view(s, site, { text, ...extra })), status);
          const document = parsed(text);
          if ("errors" in document) return show({ errors: document.errors }, 422);
          const checked = validateSiteDocument(document.value);
          if (!checked.ok) return show({ errors: checked.errors }, 422);
          if (op === "validate") return show({ message: "The document is valid." });
          if (op === "diff")
            return show({ changes: (await diffAgainstLive(deps, s.tenantId, site, document.value)).changes });
          if (op !== "stage")
            throw new AppError("bad_request", "Choose Validate, Diff against live or Stage as preview.");
          const deployment = await deploySite(deps, s.tenantId, site, document.value, true, text);
          await audited(deps, s, {
            route: "/admin/tenants/:tenant/sites/:site/deploy",
            params: { tenant: s.tenantId, site },
            response: { deployment },
          });
          return htmlResponse(
            documentsPage(
              s,
              await view(s, site, {
                message: `Staged as version ${deployment.version}. Try it below, then publish it from the history.`,
              }),
            ),
            201,
          );
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/documents/try",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s, form) => {
          const site = siteParam(params.site);
          const body = form?.get("body") ?? "";
          const show = async (extra: Partial<DocumentsView>, status = 200) =>
            htmlResponse(documentsPage(s, await view(s, site, { tryBody: body, ...extra })), status);
          const served = servedSite(deps.registry, s.tenantId, site);
          if (served.preview === null) throw new AppError("conflict", "No staged document.");
          const input = parsed(body);
          if ("errors" in input) return show({ errors: input.errors }, 422);
          if (!Value.Check(DecideBody, input.value)) {
            const errors = [...Value.Errors(DecideBody, input.value)]
              .slice(0, 20)
              .map((e) => ({ path: e.path || "/", message: e.message }));
            return show({ errors }, 422);
          }
          const decideInput = input.value as DecideInput;
          checkSubjects(decideInput);
          const req = {
            site: served,
            document: served.preview as CompiledSite,
            preview: true,
            input: decideInput,
            userId: decideInput.userId ?? null,
            now: deps.now(),
          };
          // What decide would answer, and why, both with no effect at all (an observer that
          // never applies the ticks: nothing counted, nothing recorded).
          const answer = await engine.tryJson(req);
          const why = await engine.explainJson({ ...req, now: deps.now() });
          return show({ tryAnswer: pretty(JSON.parse(answer)), tryExplain: pretty(JSON.parse(why).explain) });
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/documents/:version/publish",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          if (!/^[1-9]\d{0,8}$/.test(params.version)) throw new AppError("not_found", "Unknown document version.");
          try {
            const published = await publishVersion(deps, s.tenantId, site, Number(params.version));
            await audited(deps, s, {
              route: "/admin/tenants/:tenant/sites/:site/documents/:version/publish",
              params: { tenant: s.tenantId, site, version: params.version },
              response: { deployment: published },
            });
            return htmlResponse(
              documentsPage(s, await view(s, site, { message: `Version ${published.version} is live.` })),
            );
          } catch (error) {
            if (!(error instanceof AppError) || error.code !== "validation_failed") throw error;
            return htmlResponse(documentsPage(s, await view(s, site, { errors: error.details as FieldError[] })), 422);
          }
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/content-keys/:keyId/rotate",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          if (!/^[A-Za-z0-9._-]{1,64}$/.test(params.keyId)) throw new AppError("not_found", "Unknown content key.");
          const rotated = await rotateContentKey(deps, s.tenantId, site, params.keyId, undefined);
          await audited(deps, s, {
            route: "/admin/tenants/:tenant/sites/:site/content-keys/:keyId/rotate",
            params: { tenant: s.tenantId, site, keyId: params.keyId },
            response: { contentKey: rotated.contentKey },
          });
          const secret = rotated.secret as string;
          return htmlResponse(
            documentsPage(
              s,
              await view(s, site, {
                rotated: { id: params.keyId, secret, fingerprint: rotated.contentKey.fingerprint },
              }),
            ),
          );
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/preview-token",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          await requireSite(deps, s.tenantId, site);
          const previewToken = await deps.previewTokens.mint(s.tenantId, site, 3600, deps.now());
          await audited(deps, s, {
            route: "/admin/tenants/:tenant/sites/:site/preview-tokens",
            params: { tenant: s.tenantId, site },
            response: previewToken,
          });
          return htmlResponse(documentsPage(s, await view(s, site, { previewToken })));
        }),
      NO_PARSE,
    )
    .get(
      "/sites/:site/impact",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s) => {
          const site = servedSite(deps.registry, s.tenantId, siteParam(params.site));
          if (site.preview === null) throw new AppError("conflict", "No staged document: stage one first.");
          const report = replayImpact(deps.impact.samplesOf(site.tenantId, site.id), site, site.preview);
          return htmlResponse(impactPage(s, site.id, report));
        }),
      NO_PARSE,
    );
}

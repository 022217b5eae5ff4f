import { dirname, join } from "node:path";
import { SwaggerUIRender } from "@elysiajs/openapi/swagger";
import { type AnyElysia, Elysia, t } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { AppError } from "../infra/errors";
import { describeApi, describeKeyedDecide } from "./openapi-document";

/** The keyed decide mount's description (spec, Versioning item 7). */
const OPENAPI_PATH = "/v1/decide/openapi.json";
/** The whole public and admin API. */
const API_DOCUMENT_PATH = "/openapi.json";
/** The API explorer (Swagger UI), served with its assets from this server: it works offline. */
const EXPLORER_PATH = "/openapi";

type Json = Record<string, unknown>;

const ASSETS_DIR = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
};

/**
 * GET /openapi.json (the whole API), GET /v1/decide/openapi.json (the keyed decide mount's cut)
 * and GET /openapi (the explorer): public, since they name no site and no secret. The documents
 * are built on first read from the app's route table, which `app` returns once the app is built.
 */
export function openApiRoutes(deps: JsonApiDeps, app: () => AnyElysia) {
  let whole: Json | undefined;
  let wholeJson: string | undefined;
  let decideJson: string | undefined;
  const document = () => {
    whole ??= describeApi(app());
    return whole;
  };
  const wholeText = () => {
    wholeJson ??= JSON.stringify(document());
    return wholeJson;
  };
  const decideText = () => {
    decideJson ??= JSON.stringify(describeKeyedDecide(document()));
    return decideJson;
  };
  const json = (body: string) =>
    new Response(body, { headers: { "content-type": "application/json", "cache-control": "public, max-age=300" } });
  return new Elysia()
    .use(jsonApi(deps))
    .get(API_DOCUMENT_PATH, () => json(wholeText()))
    .get(OPENAPI_PATH, () => json(decideText()))
    .get(EXPLORER_PATH, () => {
      const page = SwaggerUIRender(
        { title: "svc decision server API", description: "The whole public and admin API", version: "1" },
        {
          url: API_DOCUMENT_PATH,
          theme: `${EXPLORER_PATH}/assets/swagger-ui.css`,
          cdn: `${EXPLORER_PATH}/assets/swagger-ui-bundle.js`,
          autoDarkMode: false,
          // Swagger UI's default validator badge is an image from an outside service: none, offline.
          validatorUrl: null,
        } as never,
      );
      return new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
    })
    .get(
      `${EXPLORER_PATH}/assets/:file`,
      ({ params }) => {
        const type = ASSETS[params.file];
        if (type === undefined) throw new AppError("not_found", "No such asset.");
        return new Response(Bun.file(join(ASSETS_DIR, params.file)), {
          headers: { "content-type": type, "cache-control": "public, max-age=86400" },
        });
      },
      { params: t.Object({ file: t.String({ maxLength: 64 }) }) },
    );
}

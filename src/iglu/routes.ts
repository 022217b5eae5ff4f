import { Elysia, t } from "elysia";
import type { Config } from "../config";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { credentials } from "../identity/credentials";
import { notFound } from "../infra/errors";
import { EVENT_SCHEMAS, igluUri, selfDescribing } from "./schemas";

/** What the credential plugin needs (identity/credentials.ts declares it). */
type CredentialDeps = Parameters<typeof credentials>[0];

/** What the schema routes need: the credential plugin's deps and the schemas' vendor. */
export type IgluRouteDeps = CredentialDeps & {
  readonly config: Config;
};

const Segment = t.String({ minLength: 1, maxLength: 128 });
const ModelParams = t.Object({ vendor: Segment, name: Segment });
const VersionParams = t.Object({ vendor: Segment, name: Segment, version: Segment });

/** A published version never changes: clients and resolvers may keep it for a year. */
const IMMUTABLE = "private, max-age=31536000, immutable";
/** A listing grows when a version is added. */
const LISTING = "private, max-age=300";

const unknownSchema = () => notFound("Unknown schema.");

/**
 * Iglu schema resolution (docs/iglu.md), in the layout standard Iglu resolvers read: a resolver
 * repository of type Iglu Server with base `<service>/v1/iglu` and the API key in `apikey`.
 * The site is the key's pin; a site header naming another site is refused (403).
 */
export function igluRoutes(deps: IgluRouteDeps & JsonApiDeps) {
  const vendor = deps.config.igluVendor;
  const uris = EVENT_SCHEMAS.map((s) => igluUri(vendor, s.name, s.version));
  const documents = new Map(EVENT_SCHEMAS.map((s) => [`${s.name}/${s.version}`, selfDescribing(vendor, s)]));
  const listing = (name: string, model?: string) =>
    EVENT_SCHEMAS.filter((s) => s.name === name && (model === undefined || s.version.split("-")[0] === model)).map(
      (s) => igluUri(vendor, s.name, s.version),
    );
  return new Elysia({ prefix: "/v1/iglu" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { siteFromKey: true, keyHeader: "apikey" } })
    .get("/schemas", ({ set }) => {
      set.headers["cache-control"] = LISTING;
      return uris;
    })
    .get(
      "/schemas/:vendor/:name/jsonschema",
      ({ params, set }) => {
        const found = params.vendor === vendor ? listing(params.name) : [];
        if (found.length === 0) throw unknownSchema();
        set.headers["cache-control"] = LISTING;
        return found;
      },
      { params: ModelParams },
    )
    .get(
      "/schemas/:vendor/:name/jsonschema/:version",
      ({ params, set }) => {
        if (params.vendor !== vendor) throw unknownSchema();
        // A bare model number lists that model's versions, as Iglu Server does.
        if (/^[1-9][0-9]*$/.test(params.version)) {
          const found = listing(params.name, params.version);
          if (found.length === 0) throw unknownSchema();
          set.headers["cache-control"] = LISTING;
          return found;
        }
        const document = documents.get(`${params.name}/${params.version}`);
        if (document === undefined) throw unknownSchema();
        set.headers["cache-control"] = IMMUTABLE;
        return document;
      },
      { params: VersionParams },
    );
}

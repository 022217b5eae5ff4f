import type * as ElysiaOpenApi from "@elysiajs/openapi";
import type { AnyElysia, TSchema } from "elysia";
import { ExplainAnswer } from "../decide/explain-model";
import { DecideAnswer, DecideBody, DecisionEntry, KEYED_DECIDE_PATH } from "../decide/model";
import { SessionAnswer, UserAnswer } from "../identity/model";
import { InterventionEventData } from "../interventions/model";
import { OfrepFailure, OfrepSuccess } from "../ofrep/model";
import { PREVIEW_HEADER } from "../preview/tokens";
import { type Credential, contractKey, isMirror, ROUTE_CONTRACTS, type RouteContract } from "./route-contracts";

/**
 * The generator, loaded on the first description asked for rather than at start, as the outside
 * services' clients are: it holds about 450 functions of its own, and every function a process
 * holds lengthens each young collection of the thread that answers keyed decide
 * (docs/performance.md, "What keyed decide costs"), whether the API's description is ever read.
 * Its ES module build, by path: a bare `require` would take its CommonJS build, and with it a
 * second copy of TypeBox and Elysia beside the ones the app already runs on.
 */
const generator = (): typeof ElysiaOpenApi =>
  require(Bun.resolveSync("@elysiajs/openapi", import.meta.dir)) as typeof ElysiaOpenApi;

type Json = Record<string, unknown>;

/** Routes the document leaves out: the operator console's HTML pages and forms (src/console). */
export const UNDESCRIBED_PREFIXES = ["/console"] as const;

/** A documented example request and the status the running server answers it with. */
interface Example {
  readonly summary: string;
  readonly value: unknown;
  readonly status: number;
}

const UNKNOWN_USER = "00000000-0000-4000-8000-000000000000";

/** Request examples, replayed by test/contracts/openapi.test.ts against a site `news`. */
const EXAMPLES: Readonly<Record<string, Readonly<Record<string, Example>>>> = {
  [`post ${KEYED_DECIDE_PATH}`]: {
    decide: {
      summary: "Two features for an anonymous device",
      value: { features: ["paywall", "section"], deviceId: "device-42", context: { referrer: "newsletter" } },
      status: 200,
    },
    explain: {
      summary: "Why: no meter ticks, no exposures",
      value: { features: ["paywall"], deviceId: "device-42", explain: true },
      status: 200,
    },
    invalid: { summary: "features must be an array", value: { features: "paywall" }, status: 422 },
  },
  "post /v1/gift-links": {
    unknownGifter: {
      summary: "A gifter who is not a user of the tenant",
      value: { userId: UNKNOWN_USER, contentId: "article-1" },
      status: 422,
    },
    invalid: { summary: "userId must be a uuid", value: { userId: "reader-1", contentId: "article-1" }, status: 422 },
  },
  "post /v1/gift-links/revoke": {
    unknown: {
      summary: "A gift that does not exist",
      value: { userId: UNKNOWN_USER, giftId: UNKNOWN_USER },
      status: 404,
    },
  },
};

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Invalid request (including a missing or overlong x-svc-site-id header, malformed JSON).",
  401: "Missing or invalid credential.",
  403: "Not allowed (for a key: not pinned to the selected site, or lacking a permission).",
  404: "Unknown site (or another resource named by the request; also a mode mismatch).",
  409: "Conflicts with an existing record.",
  410: "The emailed link is expired or no longer pending.",
  413: "Request body too large.",
  422: "Request validation failed; `details` lists the failing paths.",
  429: "Too many requests: retry after `Retry-After` seconds.",
  500: "Unexpected error (the details carry a request id).",
  503: "With Retry-After: briefly unavailable, retry then. Without it: the capability is not configured.",
};

const RETRY_AFTER = {
  description: "Whole seconds to wait before retrying.",
  schema: { type: "integer", minimum: 0 },
};

const ERROR_ENVELOPE = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message", "requestId"],
      properties: {
        code: { type: "string", description: "Open set: branch on it and on the status only." },
        message: { type: "string" },
        details: { description: "Unstable in v1: log it, never parse it." },
        requestId: { type: "string", description: "The answer's x-request-id: quote it to the operator." },
      },
    },
  },
};

/** Security requirements per credential (alternatives; `{}` means none is needed). */
const SECURITY: Readonly<Record<Credential, readonly Json[]>> = {
  none: [],
  key: [{ apiKey: [] }, { apiKeyHeader: [] }],
  session: [{ session: [] }, { sessionToken: [] }],
  "session-optional": [{ session: [] }, { sessionToken: [] }, {}],
  browser: [{ access: [] }, {}],
  newsletter: [{ session: [] }, { apiKey: [] }, { apiKeyHeader: [] }, {}],
  operator: [{ operator: [] }],
  metrics: [{ operator: [] }],
  signature: [],
};

const SECURITY_SCHEMES = {
  // Spec, Authentication: the API key is an HTTP bearer scheme, with x-api-key an equivalent
  // apiKey header; the session is an apiKey in cookie svc.session_token.
  apiKey: { type: "http", scheme: "bearer", description: "Authorization: Bearer <API_KEY> (a site-pinned key)." },
  apiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key", description: "The same API key." },
  session: { type: "apiKey", in: "cookie", name: "svc.session_token", description: "A user session." },
  sessionToken: {
    type: "http",
    scheme: "bearer",
    description: "A native client's session: the `set-auth-token` value as Authorization: Bearer.",
  },
  access: {
    type: "apiKey",
    in: "cookie",
    name: "svc.access",
    description: "The browser's signed access cookie (from get-session), with an allowed Origin; no key.",
  },
  operator: { type: "http", scheme: "bearer", description: "The operator token (SVC_OPERATOR_TOKEN)." },
};

/** Models with a name of their own: where one appears inside another schema, it is a `$ref`. */
const NAMED_MODELS: Readonly<Record<string, TSchema>> = {
  DecisionEntry,
  OfrepSuccess,
  OfrepFailure,
  User: UserAnswer,
  Session: SessionAnswer,
  InterventionEvent: InterventionEventData,
};

/** The parts of an Elysia route the document reads. */
interface RouteEntry {
  method: string;
  path: string;
  hooks?: { body?: unknown; parse?: unknown };
}

/**
 * The whole public and admin API as OpenAPI 3.1, from the app's own route table: paths, parameters,
 * bodies and answers generated by `@elysiajs/openapi` from the TypeBox models the routes validate
 * with (keyed decide, a Bun native route, from its models `DecideBody`, `DecideAnswer` and
 * `ExplainAnswer`); route-contracts.ts adds what the models cannot say (summary, credential,
 * statuses, site header). Bodies and answers are named component schemas. Throws on a route the
 * contracts do not describe.
 */
export function describeApi(app: AnyElysia): Json {
  const generated = generator().toOpenAPISchema(app, undefined, undefined, undefined, "3.1.0");
  const generatedPaths = plainIntegers(clone(generated.paths)) as Record<string, Record<string, Json>>;
  const schemas: Record<string, Json> = {
    ErrorEnvelope: ERROR_ENVELOPE,
    ...Object.fromEntries(
      Object.entries(NAMED_MODELS).map(([name, model]) => [name, plainIntegers(clone(model)) as Json]),
    ),
  };
  const named = new Map<string, string>(Object.entries(schemas).map(([name, s]) => [canonicalJson(s), name]));
  const paths: Record<string, Record<string, Json>> = {};
  const operationIds = new Set<string>();
  for (const route of app.routes as unknown as RouteEntry[]) {
    if (route.method === "OPTIONS" || UNDESCRIBED_PREFIXES.some((p) => route.path.startsWith(p))) continue;
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const method = route.method.toLowerCase();
    const key = contractKey(method, path);
    const contract = ROUTE_CONTRACTS[key];
    if (contract === undefined) throw new Error(`no contract for ${method} ${path}: add it to route-contracts.ts`);
    const operation: Json = { ...(generatedPaths[path]?.[method] ?? {}) };
    if (key === `post ${KEYED_DECIDE_PATH}`) describeDecideOperation(operation);
    fillBody(operation, route);
    const name = operationName(method, path);
    operation.operationId = uniqueId(operationIds, lowerFirst(name) + (isMirror(path) ? "Svc" : ""));
    completeOperation(operation, path, key, contract);
    nameSchemas(operation, name, schemas, named);
    const operations = paths[path] ?? {};
    operations[method] = operation;
    paths[path] = operations;
  }
  for (const [name, schema] of Object.entries(schemas)) {
    if (name in NAMED_MODELS) schemas[name] = refNamed(schema, named, name) as Json;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "svc decision server",
      version: "1",
      description:
        "The whole public and admin API: keyed decide and the browser mounts, identity, organizations, newsletters, grants, checkout, streaming, content, recommendations, OFREP, Iglu, ops and the operator plane under /admin. Browser-facing routes answer on /v1 and /svc/v1 alike. v1 changes only additively: accept new members, new enumeration values and new error codes; branch on `error.code` and the status only (docs/contracts.md).",
    },
    servers: [{ url: "/" }],
    tags: [...new Set(Object.values(ROUTE_CONTRACTS).map((c) => c.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: SECURITY_SCHEMES,
      responses: Object.fromEntries(Object.keys(STATUS_TEXT).map((s) => [String(s), errorResponse(Number(s))])),
    },
  };
}

/**
 * The keyed decide mount's own description (spec, Versioning item 7): keyed decide, the gift-link
 * routes and the interventions stream, cut from the whole document.
 */
export function describeKeyedDecide(whole: Json): Json {
  const keep = [KEYED_DECIDE_PATH, "/v1/gift-links", "/v1/gift-links/revoke", "/v1/decide/interventions"];
  const paths = whole.paths as Record<string, Json>;
  const components = whole.components as { schemas: Record<string, Json> } & Json;
  const cut: Json = {
    ...whole,
    info: {
      title: "svc keyed decide",
      version: "1",
      description:
        "Keyed decide, gift links and the interventions stream (server to server, API key): a cut of `/openapi.json`, the whole API. v1 changes only additively: accept new members, new enumeration values and new error codes. Examples run against a site `news` whose document has gift links and the features `paywall` and `section` (test/contracts/openapi.test.ts replays them).",
    },
    tags: undefined,
    paths: Object.fromEntries(keep.map((p) => [p, paths[p]])),
  };
  const used = referencedSchemas([cut.paths, components.responses], components.schemas);
  cut.components = {
    ...components,
    schemas: Object.fromEntries(Object.entries(components.schemas).filter(([name]) => used.has(name))),
  };
  return JSON.parse(JSON.stringify(cut));
}

/** Keyed decide is served natively (no Elysia hooks): its body and answers come from its models. */
function describeDecideOperation(operation: Json): void {
  operation.requestBody = {
    required: true,
    content: { "application/json": { schema: plainIntegers(clone(DecideBody)) } },
  };
  // A discriminated answer: DecideAnswer requires `decisions`, ExplainAnswer requires `explain`, and
  // each names the other's member as optional with the same type ("absent here"), so a generated
  // client types `data.decisions` as the decisions or undefined and reads it without a cast. (A
  // `false` schema would say "absent" more strictly, but openapi-fetch drops never-typed members
  // and `data.decisions` would read as unknown.)
  const decide = plainIntegers(clone(DecideAnswer)) as Json & { properties: Record<string, Json> };
  const explain = plainIntegers(clone(ExplainAnswer)) as Json & { properties: Record<string, Json> };
  decide.properties.explain = {
    ...explain.properties.explain,
    description: "Never in a decide answer: only in ExplainAnswer (`explain: true`).",
  };
  explain.properties.decisions = {
    ...decide.properties.decisions,
    description: "Never in an explain answer: only in DecideAnswer.",
  };
  operation.responses = {
    200: {
      description: "Decisions; under `explain: true`, explanations (ExplainAnswer).",
      content: {
        "application/json": {
          schema: {
            oneOf: [{ $ref: "#/components/schemas/DecideAnswer" }, { $ref: "#/components/schemas/ExplainAnswer" }],
          },
        },
      },
    },
  };
  operation["x-svc-answers"] = { DecideAnswer: decide, ExplainAnswer: explain };
}

/** Elysia leaves `content` empty when a route's body goes through our own JSON parser (jsonBody). */
function fillBody(operation: Json, route: RouteEntry): void {
  const body = operation.requestBody as { content?: Json } | undefined;
  const schema = route.hooks?.body;
  if (schema === undefined || schema === null) return;
  if (body?.content !== undefined && Object.keys(body.content).length > 0) {
    // Elysia offers every parser it knows; ours read JSON unless the route parses forms.
    const content = body.content as Record<string, Json>;
    body.content =
      content["application/x-www-form-urlencoded"] !== undefined && content["application/json"] === undefined
        ? content
        : { "application/json": content["application/json"] ?? { schema: plainIntegers(clone(schema)) } };
    return;
  }
  operation.requestBody = { required: true, content: { "application/json": { schema: plainIntegers(clone(schema)) } } };
}

function completeOperation(operation: Json, path: string, key: string, contract: RouteContract): void {
  operation.summary = contract.summary;
  if (contract.description !== undefined) operation.description = contract.description;
  operation.tags = [contract.tag];
  operation.security = SECURITY[contract.credential];
  const parameters = ((operation.parameters as Json[] | undefined) ?? []).filter(
    (p) => !(p.in === "header" && String(p.name).toLowerCase() === "x-svc-site-id"),
  );
  if (contract.site !== "none") {
    parameters.unshift({
      name: "x-svc-site-id",
      in: "header",
      required: contract.site === "required",
      description:
        contract.site === "required"
          ? "The site; under an API key it must be the key's site."
          : "The site; optional here (the key's pin, or the `site` query of a navigation).",
      schema: { type: "string", minLength: 1, maxLength: 128 },
      example: "news",
    });
  }
  if (key === `post ${KEYED_DECIDE_PATH}` || key === "post /svc/v1/decide" || key === "get /v1/decide/forward") {
    parameters.push({
      name: PREVIEW_HEADER,
      in: "header",
      required: false,
      description: "A preview token: decide against the staged document (an invalid one silently reads live).",
      schema: { type: "string" },
    });
  }
  if (key === "get /v1/decide/interventions") {
    parameters.push({
      name: "Last-Event-ID",
      in: "header",
      required: false,
      description: "Resume after this event id (sent by SSE clients on reconnect).",
      schema: { type: "string" },
    });
  }
  if (parameters.length > 0) operation.parameters = parameters;
  else delete operation.parameters;
  const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
  const examples = EXAMPLES[key];
  const json = body?.content?.["application/json"];
  if (json !== undefined && examples !== undefined && !isMirror(path)) {
    json.examples = Object.fromEntries(
      Object.entries(examples).map(([name, e]) => [
        name,
        { summary: e.summary, value: e.value, "x-expected-status": e.status },
      ]),
    );
  }
  operation.responses = responsesOf(operation.responses as Record<string, Json> | undefined, key, contract);
}

function responsesOf(generated: Record<string, Json> | undefined, key: string, contract: RouteContract): Json {
  const responses: Record<string, Json> = {};
  const ok = Object.entries(generated ?? {}).find(([status]) => Number(status) < 300)?.[1];
  for (const status of contract.statuses) {
    if (contract.answerOnError?.includes(status) && contract.answer !== undefined) {
      const response = successResponse(key, status, answerResponse(contract.answer));
      response.description = "Not ready: the checks say which part failed. Retry after `Retry-After` seconds.";
      response.headers = { "Retry-After": { ...RETRY_AFTER, required: true } };
      responses[status] = response;
      continue;
    }
    if (status >= 400) {
      responses[status] = ofrepShaped(key, status)
        ? {
            description: STATUS_TEXT[status],
            content: {
              "application/json": {
                schema: {
                  oneOf: [
                    { $ref: "#/components/schemas/OfrepFailure" },
                    { $ref: "#/components/schemas/ErrorEnvelope" },
                  ],
                },
              },
            },
          }
        : { $ref: `#/components/responses/${status}` };
      continue;
    }
    const answer = contract.answer === undefined ? undefined : answerResponse(contract.answer);
    responses[status] = successResponse(key, status, answer ?? generated?.[status] ?? ok, contract.html);
  }
  return responses;
}

/** A route's answer model (route-contracts.ts) as the generated response it stands for. */
function answerResponse(model: TSchema): Json {
  return { content: { "application/json": { schema: plainIntegers(clone(model)) } } };
}

const ofrepShaped = (key: string, status: number) =>
  key.startsWith("post /ofrep/") && (status === 400 || status === 404);

function successResponse(key: string, status: number, generated: Json | undefined, html = false): Json {
  if (status === 302) {
    return {
      description: "To the resolved url, or the feature's fallbackUrl. No JSON body.",
      headers: { Location: { required: true, schema: { type: "string" } } },
    };
  }
  if (status === 304) return { description: "Not modified: the ETag sent in If-None-Match is current." };
  if (key === "get /v1/decide/interventions") {
    return {
      description:
        "text/event-stream: each event has an `id`, an `event` (its type) and `data`, one JSON line (InterventionEvent).",
      content: {
        "text/event-stream": {
          schema: { type: "string" },
          "x-event-data": { $ref: "#/components/schemas/InterventionEvent" },
        },
      },
    };
  }
  if (key === "get /admin/db/backup") {
    return {
      description: "The embedded store's data folder as PGlite's gzipped tarball (`svc backup`).",
      content: { "application/gzip": { schema: { type: "string", format: "binary" } } },
    };
  }
  if (key === "get /metrics") {
    return {
      description: "Prometheus text exposition format.",
      content: { "text/plain": { schema: { type: "string" } } },
    };
  }
  if (html) return { description: "An HTML page.", content: { "text/html": { schema: { type: "string" } } } };
  if (key === "get /openapi/assets/{file}") {
    return { description: "The file.", content: { "*/*": { schema: { type: "string" } } } };
  }
  const schema = (generated?.content as Record<string, Json> | undefined)?.["application/json"]?.schema;
  return {
    description: status === 202 ? "Accepted: a confirmation went out for each pending list." : "Success.",
    content: {
      "application/json": {
        // A route without an answer model answers a JSON object (see docs/contracts.md, The OpenAPI document).
        schema: schema ?? { type: "object", additionalProperties: true, "x-svc-unmodelled": true },
      },
    },
  };
}

/**
 * Moves each operation's body and JSON answers into named component schemas
 * (`<Operation>Body`, `<Operation>Answer`), one per distinct schema: the `/v1` and `/svc/v1` twins
 * of a route share theirs.
 */
function nameSchemas(operation: Json, name: string, schemas: Record<string, Json>, named: Map<string, string>): void {
  const answers = operation["x-svc-answers"] as Record<string, Json> | undefined;
  if (answers !== undefined) {
    delete operation["x-svc-answers"];
    for (const [answerName, schema] of Object.entries(answers)) {
      schemas[answerName] = refNamed(schema, named) as Json;
      named.set(canonicalJson(schema), answerName);
    }
  }
  const place = (holder: Json, suffix: string) => {
    const schema = holder.schema as Json | undefined;
    if (
      schema === undefined ||
      "$ref" in schema ||
      "oneOf" in schema ||
      schema.type === "string" ||
      schema["x-svc-unmodelled"]
    )
      return;
    const canonical = canonicalJson(schema);
    let found = named.get(canonical);
    if (found === undefined) {
      found = `${name}${suffix}`;
      for (let n = 2; found in schemas; n++) found = `${name}${suffix}${n}`;
      schemas[found] = refNamed(schema, named) as Json;
      named.set(canonical, found);
    }
    holder.schema = { $ref: `#/components/schemas/${found}` };
  };
  const body = (operation.requestBody as { content?: Record<string, Json> } | undefined)?.content;
  if (name === "PostDecide" && body?.["application/json"] !== undefined) {
    const schema = body["application/json"].schema as Json;
    schemas.DecideBody = schema;
    named.set(canonicalJson(schema), "DecideBody");
  }
  for (const media of Object.values(body ?? {})) place(media, "Body");
  for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
    if (Number(status) >= 300) continue;
    for (const media of Object.values((response.content as Record<string, Json> | undefined) ?? {})) {
      place(media, "Answer");
    }
  }
}

/** Replaces every sub-schema equal to a named model by its `$ref` (not the schema itself). */
function refNamed(schema: unknown, named: Map<string, string>, self?: string): unknown {
  if (Array.isArray(schema)) return schema.map((s) => refNamed(s, named));
  if (typeof schema !== "object" || schema === null) return schema;
  const name = named.get(canonicalJson(schema));
  if (name !== undefined && name !== self && name in NAMED_MODELS) return { $ref: `#/components/schemas/${name}` };
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, refNamed(v, named)]));
}

function referencedSchemas(value: unknown, schemas: Record<string, Json>, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) referencedSchemas(v, schemas, into);
  } else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/")) {
        const name = v.slice("#/components/schemas/".length);
        if (!into.has(name)) {
          into.add(name);
          referencedSchemas(schemas[name], schemas, into);
        }
      } else referencedSchemas(v, schemas, into);
    }
  }
  return into;
}

/** `post /admin/tenants/{tenant}/sites` -> `PostAdminTenantsSites`; `/v1` and `/svc` dropped. */
function operationName(method: string, path: string): string {
  const words = path
    .split("/")
    .filter((s) => s !== "" && s !== "v1" && s !== "svc" && !s.startsWith("{"))
    .flatMap((s) => s.split(/[^A-Za-z0-9]+/));
  const browser = path.startsWith("/svc/") && !isMirror(path) ? "Browser" : "";
  return [method, ...words].map(upperFirst).join("") + browser;
}

function uniqueId(ids: Set<string>, id: string): string {
  let unique = id;
  for (let n = 2; ids.has(unique); n++) unique = `${id}${n}`;
  ids.add(unique);
  return unique;
}

const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

/** A JSON copy: TypeBox's symbols and Elysia's functions dropped. */
function clone(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

/** JSON with sorted keys, so equal schemas compare equal. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function errorResponse(status: number): Json {
  const response: Json = {
    description: STATUS_TEXT[status],
    content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
  };
  if (status === 429) response.headers = { "Retry-After": { ...RETRY_AFTER, required: true } };
  if (status === 503) response.headers = { "Retry-After": RETRY_AFTER };
  return response;
}

/**
 * Elysia describes `t.Integer` as "an integer, or a string of one" (its numeric coercion of
 * query values); our JSON bodies and answers carry real integers, so the document says so.
 */
function plainIntegers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plainIntegers);
  if (typeof value !== "object" || value === null) return value;
  const o = value as Json;
  const anyOf = o.anyOf as Json[] | undefined;
  if (
    anyOf?.length === 2 &&
    anyOf.some((x) => x.type === "string" && (x.format === "integer" || x.format === "numeric")) &&
    anyOf.some((x) => x.type === "integer" || x.type === "number")
  ) {
    const { anyOf: _, ...rest } = o;
    return { ...rest, ...(anyOf.find((x) => x.type !== "string") as Json) };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, plainIntegers(v)]));
}

import { toOpenAPISchema } from "@elysiajs/openapi";
import { Elysia, t } from "elysia";
import { ExplainAnswer } from "../decide/explain-model";
import { DecideAnswer, DecideBody, KEYED_DECIDE_PATH } from "../decide/model";
import { giftRoutes } from "../gifts/routes";
import { InterventionEventData } from "../interventions/model";
import { INTERVENTIONS_PATH, interventionRoutes } from "../interventions/routes";
import { PREVIEW_HEADER } from "../preview/tokens";

export const OPENAPI_PATH = "/v1/decide/openapi.json";

type Json = Record<string, unknown>;

/** A documented example request and the status the running server answers it with. */
interface Example {
  readonly summary: string;
  readonly value: unknown;
  readonly status: number;
}

/** What the spec says of each documented route beyond its models: statuses and examples. */
interface RouteContract {
  readonly summary: string;
  readonly description: string;
  readonly statuses: readonly number[];
  readonly examples?: Readonly<Record<string, Example>>;
}

const UNKNOWN_USER = "00000000-0000-4000-8000-000000000000";

const CONTRACTS: Readonly<Record<string, RouteContract>> = {
  [`post ${KEYED_DECIDE_PATH}`]: {
    summary: "Decide features for a subject (keyed, server to server)",
    description:
      "Evaluates the named features against one frozen snapshot of facts and answers a decision per feature. Every call ticks the meters its rules charge, so a retry is not free; `explain: true` answers why instead, with no side effect (docs/contracts.md).",
    statuses: [200, 400, 401, 403, 404, 413, 422, 429, 500, 503],
    examples: {
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
  },
  "post /v1/gift-links": {
    summary: "Mint a gift link",
    description:
      "A signed-in reader (the gifter, a user of the tenant) shares one article; the answer's token goes on the page URL as `?_gt=` (docs/gift-links.md).",
    statuses: [201, 400, 401, 403, 404, 409, 413, 422, 500, 503],
    examples: {
      unknownGifter: {
        summary: "A gifter who is not a user of the tenant",
        value: { userId: UNKNOWN_USER, contentId: "article-1" },
        status: 422,
      },
      invalid: { summary: "userId must be a uuid", value: { userId: "reader-1", contentId: "article-1" }, status: 422 },
    },
  },
  "post /v1/gift-links/revoke": {
    summary: "Revoke a gift link",
    description:
      "The gifter takes back one of their links; readers stop reading it as soon as every process applies the change.",
    statuses: [200, 400, 401, 403, 404, 413, 422, 500, 503],
    examples: {
      unknown: {
        summary: "A gift that does not exist",
        value: { userId: UNKNOWN_USER, giftId: UNKNOWN_USER },
        status: 404,
      },
    },
  },
  [`get ${INTERVENTIONS_PATH}`]: {
    summary: "Subscribe to interventions (server-sent events)",
    description:
      "A stream of events telling that decisions for the subjects (or the whole site) may have changed: a deploy, grants, a gift link, streaming values, a meter period rolling over. Events carry what changed, never a decision: decide again. Heartbeats are SSE comments; `Last-Event-ID` resumes within a bounded window (past it a `reset` event). At most SVC_SSE_STREAMS_PER_KEY open streams per key (docs/interventions.md).",
    statuses: [200, 400, 401, 403, 404, 422, 429, 500, 503],
  },
};

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Invalid request (including a missing or overlong x-svc-site-id header, malformed JSON).",
  401: "Missing or invalid API key.",
  403: "The key is not pinned to the selected site.",
  404: "Unknown site (or another resource named by the request).",
  409: "Conflicts with an existing record.",
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
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "Open set: branch on it and on the status only." },
        message: { type: "string" },
        details: { description: "Unstable in v1: log it, never parse it." },
      },
    },
  },
};

/**
 * The keyed decide mount's machine-readable description (spec, Versioning item 7): keyed decide,
 * the gift-link routes and the interventions stream. Paths and schemas are generated by
 * `@elysiajs/openapi` from the routes' own TypeBox models (the gift and interventions routes
 * exactly as the app serves them; keyed decide, a Bun native route, described by its body and
 * answer models); the spec's security schemes, error envelope, statuses and examples are added
 * here. Built once per app.
 */
/** What describing the routes needs: the deps of the route groups it builds to read their schemas. */
export type OpenApiDeps = Parameters<typeof giftRoutes>[0] &
  Parameters<typeof interventionRoutes>[0] & { readonly interventions: Parameters<typeof interventionRoutes>[1] };

export function decideOpenApi(deps: OpenApiDeps): Json {
  const described = new Elysia()
    // Described only: the app serves keyed decide as a native route (decide/routes.ts).
    .post(KEYED_DECIDE_PATH, (() => undefined) as never, {
      body: DecideBody,
      response: { 200: t.Union([DecideAnswer, ExplainAnswer]) },
    })
    .use(giftRoutes(deps))
    .use(interventionRoutes(deps, deps.interventions));
  const generated = toOpenAPISchema(described, undefined, undefined, undefined, "3.1.0");
  const paths = plainIntegers(JSON.parse(JSON.stringify(generated.paths))) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const contract = CONTRACTS[`${method} ${path}`];
      if (contract === undefined) throw new Error(`no contract for ${method} ${path}`);
      completeOperation(operation, path, contract);
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "svc keyed decide",
      version: "1",
      description:
        "Keyed decide, gift links and the interventions stream (server to server, API key). v1 changes only additively: accept new members, new enumeration values and new error codes. Examples run against a site `news` whose document has gift links and the features `paywall` and `section` (test/contracts/openapi.test.ts replays them).",
    },
    servers: [{ url: "/" }],
    paths,
    components: {
      schemas: {
        ErrorEnvelope: ERROR_ENVELOPE,
        InterventionEvent: JSON.parse(JSON.stringify(InterventionEventData)),
        ...(generated.components.schemas ?? {}),
      },
      securitySchemes: {
        // Spec, Authentication: the API key is an HTTP bearer scheme, with x-api-key an equivalent
        // apiKey header; the session is an apiKey in cookie svc.session_token.
        apiKey: { type: "http", scheme: "bearer", description: "Authorization: Bearer <API_KEY> (a site-pinned key)." },
        apiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key", description: "The same API key." },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "svc.session_token",
          description: "A user session (browser-facing routes; none of the routes here).",
        },
      },
      responses: Object.fromEntries(Object.keys(STATUS_TEXT).map((s) => [String(s), errorResponse(Number(s))])),
    },
  };
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

function completeOperation(operation: Json, path: string, contract: RouteContract): void {
  operation.summary = contract.summary;
  operation.description = contract.description;
  operation.security = [{ apiKey: [] }, { apiKeyHeader: [] }];
  const parameters = (operation.parameters as Json[] | undefined) ?? [];
  parameters.unshift({
    name: "x-svc-site-id",
    in: "header",
    required: true,
    description: "The site; it must be the key's site.",
    schema: { type: "string", minLength: 1, maxLength: 128 },
    example: "news",
  });
  if (path === KEYED_DECIDE_PATH) {
    parameters.push({
      name: PREVIEW_HEADER,
      in: "header",
      required: false,
      description: "A preview token: decide against the staged document (an invalid one silently reads live).",
      schema: { type: "string" },
    });
  }
  if (path === INTERVENTIONS_PATH) {
    parameters.push({
      name: "Last-Event-ID",
      in: "header",
      required: false,
      description: "Resume after this event id (sent by SSE clients on reconnect).",
      schema: { type: "string" },
    });
  }
  operation.parameters = parameters;
  const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
  if (body?.content !== undefined) {
    const json = body.content["application/json"] as Json;
    body.content = { "application/json": json };
    if (contract.examples !== undefined) {
      json.examples = Object.fromEntries(
        Object.entries(contract.examples).map(([name, e]) => [
          name,
          { summary: e.summary, value: e.value, "x-expected-status": e.status },
        ]),
      );
    }
  }
  const responses = (operation.responses as Record<string, Json> | undefined) ?? {};
  if (path === INTERVENTIONS_PATH) {
    responses["200"] = {
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
  for (const status of contract.statuses) {
    if (status < 300) {
      const ok = responses[String(status)];
      if (ok !== undefined && ok.description === undefined) ok.description = "Success.";
      continue;
    }
    responses[String(status)] = { $ref: `#/components/responses/${status}` };
  }
  operation.responses = responses;
}

/** GET /v1/decide/openapi.json: public (it names no site and no secret), built on first read. */
export function openApiRoutes(deps: OpenApiDeps) {
  let json: string | undefined;
  return new Elysia().get(OPENAPI_PATH, () => {
    json ??= JSON.stringify(decideOpenApi(deps));
    return new Response(json, {
      headers: { "content-type": "application/json", "cache-control": "public, max-age=300" },
    });
  });
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

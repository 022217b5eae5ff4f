import { type Static, type TSchema, Type } from "@sinclair/typebox";

/**
 * Per-tenant configuration of each outside service (DESIGN.md, "Outside services"). Any string
 * member may instead be `env:NAME`, a reference resolved from the server's environment when the
 * service is called, so a secret can stay out of the database altogether. Stored values are
 * sealed (AES-256-GCM under SVC_SECRET) and never answered back: GET shows which members are set.
 */
const text = (maxLength = 512) => Type.String({ minLength: 1, maxLength });
/** An http(s) base URL (tests point a client at a fake on 127.0.0.1). Checked with URL too. */
const baseUrl = Type.String({ minLength: 1, maxLength: 2048, pattern: "^(https?://|env:)" });

export const SERVICE_SCHEMAS = {
  /** CMS re-reads: Storyblok Content Delivery API. */
  storyblok: Type.Object(
    {
      token: text(),
      /** Base URL override, e.g. http://127.0.0.1:4010/v2 in tests; else Storyblok's own by region. */
      endpoint: Type.Optional(baseUrl),
      region: Type.Optional(
        Type.Union([
          Type.Literal("eu"),
          Type.Literal("us"),
          Type.Literal("ap"),
          Type.Literal("ca"),
          Type.Literal("cn"),
        ]),
      ),
    },
    { additionalProperties: false },
  ),
  /** Recommendations: Recombee API (HMAC-signed). */
  recombee: Type.Object(
    {
      databaseId: text(200),
      token: text(),
      region: Type.Optional(text(64)),
      /** Base URI override, e.g. http://127.0.0.1:4020 in tests. */
      baseUri: Type.Optional(baseUrl),
    },
    { additionalProperties: false },
  ),
  /** Checkout: Stripe API and signed webhooks. */
  stripe: Type.Object(
    {
      secretKey: text(),
      webhookSecret: text(),
      /** API base override (host, port and protocol given to the client), e.g. http://127.0.0.1:4030. */
      apiBase: Type.Optional(baseUrl),
    },
    { additionalProperties: false },
  ),
  /** Newsletter delivery: listmonk REST API (basic auth with an API user). */
  listmonk: Type.Object(
    {
      url: baseUrl,
      username: text(200),
      password: text(),
    },
    { additionalProperties: false },
  ),
} satisfies Record<string, TSchema>;

export type ServiceName = keyof typeof SERVICE_SCHEMAS;
export type ServiceConfig<S extends ServiceName> = Static<(typeof SERVICE_SCHEMAS)[S]>;

export function isServiceName(name: string): name is ServiceName {
  return Object.hasOwn(SERVICE_SCHEMAS, name);
}

const service = Type.String({ description: "storyblok, recombee, stripe or listmonk" });
const set = Type.Array(Type.String(), { description: "The members set (values are never answered)." });

/** GET /admin/tenants/:tenant/services. */
export const ServicesAnswer = Type.Object({
  tenant: Type.String(),
  services: Type.Array(Type.Object({ service, set })),
});
/** PUT /admin/tenants/:tenant/services/:service. */
export const ServiceSetAnswer = Type.Object({ tenant: Type.String(), service, set });
/** DELETE /admin/tenants/:tenant/services/:service. */
export const ServiceClearedAnswer = Type.Object({ tenant: Type.String(), service, cleared: Type.Literal(true) });

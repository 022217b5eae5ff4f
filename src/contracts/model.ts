import { t } from "elysia";

/** GET /openapi.json and /v1/decide/openapi.json: an OpenAPI 3.1 document (its own schema is the spec's). */
export const OpenApiAnswer = t.Object(
  {
    openapi: t.String({ description: "3.1.0" }),
    info: t.Object({ title: t.String(), version: t.String() }, { additionalProperties: true }),
    paths: t.Object({}, { additionalProperties: true }),
    components: t.Optional(t.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true },
);

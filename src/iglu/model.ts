import { t } from "elysia";

/** A listing: `iglu:` URIs. */
export const IgluListing = t.Array(t.String({ description: "iglu:<vendor>/<name>/jsonschema/<version>" }));

/** One version's self-describing JSON Schema, or (a bare model number) that model's listing. */
export const IgluSchemaAnswer = t.Union([
  t.Object(
    {
      self: t.Object(
        { vendor: t.String(), name: t.String(), format: t.String(), version: t.String() },
        { additionalProperties: true },
      ),
    },
    { additionalProperties: true },
  ),
  IgluListing,
]);

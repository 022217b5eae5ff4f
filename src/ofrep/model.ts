import { t } from "elysia";

/** OFREP's request body: `{ context }`, an OpenFeature evaluation context (any JSON object). */
export const OfrepRequest = t.Object({ context: t.Optional(t.Unknown()) }, { additionalProperties: true });

export const OfrepFlagParams = t.Object({ key: t.String({ minLength: 1, maxLength: 128 }) });

export const OfrepSuccess = t.Object({
  key: t.String(),
  value: t.Unknown({ description: "The outcome's fields (an object; empty for a plain outcome)." }),
  reason: t.String({ description: "TARGETING_MATCH, SPLIT, DEFAULT, STATIC, DISABLED or ERROR." }),
  variant: t.String({ description: "The outcome id." }),
  metadata: t.Optional(t.Record(t.String(), t.Union([t.String(), t.Number(), t.Boolean()]))),
});

export const OfrepFailure = t.Object({
  key: t.Optional(t.String()),
  errorCode: t.String({ description: "FLAG_NOT_FOUND, TARGETING_KEY_MISSING, INVALID_CONTEXT, PARSE_ERROR, GENERAL" }),
  errorDetails: t.Optional(t.String()),
});

export type OfrepSuccess = typeof OfrepSuccess.static;
export type OfrepFailure = typeof OfrepFailure.static;

/** The bulk evaluation's answer: one success or failure per flag. */
export const OfrepBulkAnswer = t.Object({ flags: t.Array(t.Union([OfrepSuccess, OfrepFailure])) });

import { Type } from "@sinclair/typebox";
import { isStorableText } from "../core/text";
import { unstorableText } from "../http/json-shape";
import { ExperimentExposureData } from "../iglu/schemas";

// TypeBox's own builders, which Elysia's `t` extends: the modules keyed decide runs on load no
// Elysia (test/decide/lean-imports.test.ts).

/** POST /v1/decide body. Unknown members are accepted (v1 changes only additively). */
export const DecideBody = Type.Object({
  features: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 }),
  content: Type.Optional(
    Type.Object({
      payload: Type.String({ maxLength: 65_536 }),
      signature: Type.String({ maxLength: 512 }),
    }),
  ),
  // Any object: accepts exactly what Type.Record(Type.String(), Type.Unknown()) does for a JSON
  // body, but checks the type once instead of testing every key against a pattern on every request.
  context: Type.Optional(Type.Object({}, { additionalProperties: true })),
  userId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  /** Anonymous device id (e.g. the tracker's domain user id): the subject when no userId. */
  deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  /** The page's `?_gt` token verbatim; any value is accepted (an unusable one reads as no gift: docs/gift-links.md). */
  giftLink: Type.Optional(Type.String()),
  /**
   * Keyed decide only: answer why instead of a decision (docs/contracts.md): no meter ticks, no
   * gift redemption counted, no exposures.
   */
  explain: Type.Optional(Type.Boolean()),
});

export type DecideInput = typeof DecideBody.static;

/**
 * Refuses (422) a subject Postgres could not store: the only members of a decide body that reach
 * storage (as meter subjects). The keyed route checks just these rather than walking the whole
 * body on the hot path; Elysia routes check every string of every body (`jsonBody`).
 */
export function checkSubjects(input: DecideInput): void {
  if (input.userId !== undefined && !isStorableText(input.userId)) throw unstorableText("/userId");
  if (input.deviceId !== undefined && !isStorableText(input.deviceId)) throw unstorableText("/deviceId");
}

/**
 * Plain integers, as the API description always said: it flattens Elysia's `t.Integer` (a digit
 * string or an integer) to the integer (`plainIntegers`). The answer models are only described,
 * never checked.
 */
const MeterReads = Type.Record(
  Type.String(),
  Type.Object({
    allowance: Type.Integer({ description: "The meter's allowance this period." }),
    count: Type.Integer({
      description: "Counted before this request's own ticks: allowance - count was left going in.",
    }),
  }),
  { description: "Meter reads the feature's rules made, by meter name; absent when no rule read a meter." },
);

/** One answered feature (DESIGN.md's response contract). */
export const DecisionEntry = Type.Object(
  {
    outcome: Type.String({ description: "The outcome id the site switches on." }),
    type: Type.Optional(
      Type.String({
        description: "The verdict, present iff the outcome declared one: allow, deny, redirect, data (open set).",
      }),
    ),
    fields: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: "The outcome's own named fields, as plain JSON." }),
    ),
    meters: Type.Optional(MeterReads),
  },
  { additionalProperties: true },
);

/** The keyed decide answer (200). New members may appear (v1 changes only additively). */
export const DecideAnswer = Type.Object(
  {
    decisions: Type.Record(Type.String(), DecisionEntry, { description: "One entry per feature that resolved." }),
    unanswered: Type.Array(Type.String(), {
      description: "Names asked for and not answered (unknown, unpublished, disabled or not running on the site).",
    }),
    preview: Type.Boolean({ description: "The answer came from the staged preview document." }),
    exposures: Type.Array(
      Type.Object({
        schema: Type.String({ description: "iglu:<vendor>/experiment_exposure/jsonschema/1-0-0 (see /v1/iglu)." }),
        data: ExperimentExposureData,
      }),
      { description: "The batch's experiment exposures, one per experiment: self-describing events to fire as is." },
    ),
    accessMissing: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: true },
);

/** Keyed decide's path: the route publishers' servers call. */
export const KEYED_DECIDE_PATH = "/v1/decide";

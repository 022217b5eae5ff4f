import { t } from "elysia";
import { isStorableText } from "../core/text";
import { unstorableText } from "../http/json-shape";
import { ExperimentExposureData } from "../iglu/schemas";

/** POST /v1/decide body. Unknown members are accepted (v1 changes only additively). */
export const DecideBody = t.Object({
  features: t.Array(t.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 }),
  content: t.Optional(
    t.Object({
      payload: t.String({ maxLength: 65_536 }),
      signature: t.String({ maxLength: 512 }),
    }),
  ),
  // Any object: accepts exactly what t.Record(t.String(), t.Unknown()) does for a JSON body, but
  // checks the type once instead of testing every key against a pattern on every request.
  context: t.Optional(t.Object({}, { additionalProperties: true })),
  userId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  /** Anonymous device id (e.g. the tracker's domain user id): the subject when no userId. */
  deviceId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  /** The page's `?_gt` token verbatim; any value is accepted (an unusable one reads as no gift: docs/gift-links.md). */
  giftLink: t.Optional(t.String()),
  /**
   * Keyed decide only: answer why instead of a decision (docs/contracts.md): no meter ticks, no
   * gift redemption counted, no exposures.
   */
  explain: t.Optional(t.Boolean()),
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

const MeterReads = t.Record(
  t.String(),
  t.Object({
    allowance: t.Integer({ description: "The meter's allowance this period." }),
    count: t.Integer({ description: "Counted before this request's own ticks: allowance - count was left going in." }),
  }),
  { description: "Meter reads the feature's rules made, by meter name; absent when no rule read a meter." },
);

/** One answered feature (DESIGN.md's response contract). */
export const DecisionEntry = t.Object(
  {
    outcome: t.String({ description: "The outcome id the site switches on." }),
    type: t.Optional(
      t.String({
        description: "The verdict, present iff the outcome declared one: allow, deny, redirect, data (open set).",
      }),
    ),
    fields: t.Optional(
      t.Object({}, { additionalProperties: true, description: "The outcome's own named fields, as plain JSON." }),
    ),
    meters: t.Optional(MeterReads),
  },
  { additionalProperties: true },
);

/** The keyed decide answer (200). New members may appear (v1 changes only additively). */
export const DecideAnswer = t.Object(
  {
    decisions: t.Record(t.String(), DecisionEntry, { description: "One entry per feature that resolved." }),
    unanswered: t.Array(t.String(), {
      description: "Names asked for and not answered (unknown, unpublished, disabled or not running on the site).",
    }),
    preview: t.Boolean({ description: "The answer came from the staged preview document." }),
    exposures: t.Array(
      t.Object({
        schema: t.String({ description: "iglu:<vendor>/experiment_exposure/jsonschema/1-0-0 (see /v1/iglu)." }),
        data: ExperimentExposureData,
      }),
      { description: "The batch's experiment exposures, one per experiment: self-describing events to fire as is." },
    ),
    accessMissing: t.Optional(t.Literal(true)),
  },
  { additionalProperties: true },
);

/** Keyed decide's path: the route publishers' servers call. */
export const KEYED_DECIDE_PATH = "/v1/decide";

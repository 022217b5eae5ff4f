import { t } from "elysia";

const FactRead = t.Object({
  fact: t.String({ description: "namespace.path as the rule names it" }),
  source: t.Union([t.Literal("signed"), t.Literal("stored"), t.Literal("unverified")], {
    description:
      "signed: a verified content descriptor or gift link; stored: the service's own records; unverified: the caller's context.",
  }),
  available: t.Boolean({ description: "False when the namespace is unavailable on this request." }),
  value: t.Optional(t.Unknown({ description: "The value read; absent when the path holds nothing." })),
});

const MeterReading = t.Object({
  meter: t.String(),
  available: t.Boolean(),
  allowance: t.Optional(t.Integer()),
  count: t.Optional(t.Integer()),
  remaining: t.Optional(t.Integer()),
  seen: t.Optional(t.Boolean()),
});

const Condition = t.Object(
  {},
  { additionalProperties: true, description: "The rule's condition in the document's words." },
);

/** One feature's explanation (core/explain.ts). */
export const FeatureExplanation = t.Object({
  outcome: t.String(),
  type: t.Optional(t.String()),
  matched: t.Union([
    t.Object({
      rule: t.Integer({ description: "Index of the rule in the feature's rules." }),
      condition: t.Union([Condition, t.Null()]),
      split: t.Optional(t.Object({ experiment: t.String(), variant: t.String() })),
    }),
    t.Object({ rule: t.Literal("default") }),
    t.Object({ rule: t.Literal("onError"), reason: t.String() }),
  ]),
  rules: t.Array(
    t.Object({
      index: t.Integer(),
      condition: t.Union([Condition, t.Null()]),
      result: t.Union([t.Literal("matched"), t.Literal("not matched"), t.Literal("error")]),
      facts: t.Array(FactRead),
      meters: t.Array(MeterReading),
    }),
    { description: "The rules evaluated, in order, up to the one that decided." },
  ),
  meters: t.Optional(
    t.Record(t.String(), t.Object({ allowance: t.Integer(), count: t.Integer() }), {
      description: "The meter reads the decision would carry.",
    }),
  ),
  wouldChange: t.Optional(
    t.Array(t.String(), { description: 'For a deny: what would change it, e.g. "grant `premium`".' }),
  ),
});

/** The keyed decide answer under `explain: true`: no meter ticks, no exposures. */
export const ExplainAnswer = t.Object(
  {
    explain: t.Record(t.String(), FeatureExplanation),
    unanswered: t.Array(t.String()),
    preview: t.Boolean(),
    subject: t.Union([t.String(), t.Null()]),
    contentVerified: t.Boolean(),
  },
  { additionalProperties: true },
);

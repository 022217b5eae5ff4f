import { t } from "elysia";

export const RANGES = ["1h", "24h", "7d", "30d"] as const;
export type Range = (typeof RANGES)[number];

export const RangeQuery = t.Object({
  range: t.Optional(t.Union(RANGES.map((r) => t.Literal(r)))),
});

const Count = t.Integer({ minimum: 0 });

export const DecisionSeries = t.Object({
  feature: t.String(),
  outcome: t.String(),
  experiment: t.String(),
  variant: t.String(),
  verdict: t.String(),
  offer: t.String(),
  counts: t.Array(Count),
  total: Count,
});

export const DecisionsReport = t.Object({
  site: t.String(),
  range: t.String(),
  grain: t.String(),
  from: t.String(),
  to: t.String(),
  buckets: t.Array(t.String(), { description: "Start of each bucket (UTC, ISO 8601)" }),
  series: t.Array(DecisionSeries),
  total: Count,
});
export type DecisionsReport = typeof DecisionsReport.static;

export const FunnelRow = t.Object({
  day: t.String(),
  offer: t.String(),
  walled: Count,
  started: Count,
  completed: Count,
  granted: Count,
});

export const FunnelReport = t.Object({
  site: t.String(),
  range: t.String(),
  from: t.String(),
  to: t.String(),
  days: t.Array(FunnelRow),
  offers: t.Array(FunnelRow, { description: "Per offer over the whole range (day empty)" }),
  total: FunnelRow,
});
export type FunnelReport = typeof FunnelReport.static;
export type FunnelRow = typeof FunnelRow.static;

export const VariantReport = t.Object({
  variant: t.String(),
  exposures: Count,
  conversions: Count,
  rate: t.Number(),
  interval: t.Array(t.Number(), { minItems: 2, maxItems: 2 }),
  outcomes: t.Record(t.String(), Count),
  versusControl: t.Optional(
    t.Object({
      difference: t.Number(),
      interval: t.Array(t.Number(), { minItems: 2, maxItems: 2 }),
      z: t.Number(),
      p: t.Number(),
    }),
  ),
});
export type VariantReport = typeof VariantReport.static;

export const ExperimentReport = t.Object({
  experiment: t.String(),
  control: t.String(),
  test: t.String(),
  enough: t.Boolean(),
  verdict: t.Union([t.Literal("too-early"), t.Literal("no-difference"), t.Literal("better"), t.Literal("worse")]),
  winner: t.Union([t.String(), t.Null()]),
  sentence: t.String(),
  variants: t.Array(VariantReport),
});
export type ExperimentReport = typeof ExperimentReport.static;

export const ExperimentsReport = t.Object({
  site: t.String(),
  range: t.String(),
  from: t.String(),
  to: t.String(),
  minimum: t.Object({ exposures: Count, conversions: Count }),
  experiments: t.Array(ExperimentReport),
});
export type ExperimentsReport = typeof ExperimentsReport.static;

export const MeterReport = t.Object({
  meter: t.String(),
  kind: t.String(),
  allowance: Count,
  period: t.String(),
  readers: Count,
  values: t.Array(t.Object({ value: Count, readers: Count })),
});

export const MetersReport = t.Object({
  site: t.String(),
  meters: t.Array(MeterReport),
});
export type MetersReport = typeof MetersReport.static;

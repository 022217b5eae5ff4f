import type { CompiledSite } from "../core/compile";
import type { CompiledExperiment } from "../core/hash";
import type { SiteState } from "../sites/registry";
import type {
  DecisionsReport,
  ExperimentReport,
  ExperimentsReport,
  FunnelReport,
  FunnelRow,
  MetersReport,
  Range,
  VariantReport,
} from "./model";
import { twoProportionZTest, wilson } from "./stats";
import type { DecisionCountBucket, Grain, InsightStore } from "./store";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const GRAIN_MS: Record<Grain, number> = { minute: MINUTE_MS, hour: HOUR_MS, day: DAY_MS };

/** Each range's bucket size and length: the chart's resolution. */
const WINDOWS: Record<Range, { grain: Grain; buckets: number }> = {
  "1h": { grain: "minute", buckets: 60 },
  "24h": { grain: "hour", buckets: 24 },
  "7d": { grain: "hour", buckets: 168 },
  "30d": { grain: "day", buckets: 30 },
};

/** Funnel days per range: the days the range touches, today included. */
const FUNNEL_DAYS: Record<Range, number> = { "1h": 1, "24h": 1, "7d": 7, "30d": 30 };

/** Before a winner is named, every variant needs this many exposures and conversions. */
export const MINIMUM = { exposures: 500, conversions: 10 } as const;
/** Significance level of the two-sided test. */
const ALPHA = 0.05;

export interface InsightDeps {
  readonly insight: InsightStore;
  /** Writes this process's unflushed counters first, so a report includes them. */
  readonly flushCounters: () => Promise<void>;
  readonly now: () => number;
}

interface Window {
  readonly grain: Grain;
  readonly from: number;
  readonly to: number;
  readonly starts: number[];
}

function windowOf(range: Range, now: number): Window {
  const { grain, buckets } = WINDOWS[range];
  const size = GRAIN_MS[grain];
  const to = now - (now % size) + size;
  const from = to - buckets * size;
  const starts: number[] = [];
  for (let at = from; at < to; at += size) starts.push(at);
  return { grain, from, to, starts };
}

const iso = (ms: number) => new Date(ms).toISOString();
const dayOf = (ms: number) => iso(ms).slice(0, 10);

/** Decisions per feature, outcome and variant over the range, one count per bucket. */
export async function decisionsReport(deps: InsightDeps, site: SiteState, range: Range): Promise<DecisionsReport> {
  await deps.flushCounters();
  const w = windowOf(range, deps.now());
  const rows = await deps.insight.decisionBuckets({
    tenantId: site.tenantId,
    siteId: site.id,
    grain: w.grain,
    from: w.from,
    to: w.to,
  });
  const size = GRAIN_MS[w.grain];
  const series = new Map<string, DecisionsReport["series"][number]>();
  let total = 0;
  for (const r of rows) {
    // Exposure rows (no feature) belong to the experiments report.
    if (r.feature === "") continue;
    const id = [r.feature, r.outcome, r.experiment, r.variant].join("\u0001");
    let s = series.get(id);
    if (s === undefined) {
      s = { ...keyOf(r), counts: w.starts.map(() => 0), total: 0 };
      series.set(id, s);
    }
    const at = Math.floor((r.bucket - w.from) / size);
    s.counts[at] = (s.counts[at] as number) + r.count;
    s.total += r.count;
    total += r.count;
  }
  return {
    site: site.id,
    range,
    grain: w.grain,
    from: iso(w.from),
    to: iso(w.to),
    buckets: w.starts.map(iso),
    series: [...series.values()],
    total,
  };
}

function keyOf(r: DecisionCountBucket) {
  return {
    feature: r.feature,
    outcome: r.outcome,
    experiment: r.experiment,
    variant: r.variant,
    verdict: r.verdict,
    offer: r.offer,
  };
}

/**
 * The paywall's funnel per UTC day and offer: walls shown (decisions whose outcome is a `deny`
 * verdict, by the offer the wall names), checkout sessions started, completed, and completions
 * that granted. Counted from stored rows, not sampled.
 */
export async function funnelReport(deps: InsightDeps, site: SiteState, range: Range): Promise<FunnelReport> {
  await deps.flushCounters();
  const now = deps.now();
  const to = now - (now % DAY_MS) + DAY_MS;
  const from = to - FUNNEL_DAYS[range] * DAY_MS;
  const [walls, checkouts] = await Promise.all([
    deps.insight.decisionBuckets({ tenantId: site.tenantId, siteId: site.id, grain: "day", from, to }),
    deps.insight.checkoutDays(site.tenantId, site.id, from, to),
  ]);
  const rows = new Map<string, FunnelRow>();
  const row = (day: string, offer: string): FunnelRow => {
    const id = `${day}\u0001${offer}`;
    let r = rows.get(id);
    if (r === undefined) {
      r = { day, offer, walled: 0, started: 0, completed: 0, granted: 0 };
      rows.set(id, r);
    }
    return r;
  };
  for (const w of walls) if (w.feature !== "" && w.verdict === "deny") row(dayOf(w.bucket), w.offer).walled += w.count;
  for (const c of checkouts) {
    const r = row(dayOf(c.day), c.offer);
    r.started += c.started;
    r.completed += c.completed;
    r.granted += c.granted;
  }
  const days = [...rows.values()].sort((a, b) => (a.day + a.offer < b.day + b.offer ? -1 : 1));
  const offers = new Map<string, FunnelRow>();
  const total: FunnelRow = { day: "", offer: "", walled: 0, started: 0, completed: 0, granted: 0 };
  for (const d of days) {
    let o = offers.get(d.offer);
    if (o === undefined) {
      o = { day: "", offer: d.offer, walled: 0, started: 0, completed: 0, granted: 0 };
      offers.set(d.offer, o);
    }
    for (const r of [o, total]) {
      r.walled += d.walled;
      r.started += d.started;
      r.completed += d.completed;
      r.granted += d.granted;
    }
  }
  return { site: site.id, range, from: iso(from), to: iso(to), days, offers: [...offers.values()], total };
}

/**
 * Each experiment of the live document: exposures per variant (decide answers that carried
 * it), the outcomes its arms gave, and conversions (completed checkouts that granted, credited to
 * the variant the same stable hash assigns the granted user). Each variant's rate has a Wilson
 * 95% interval; each variant is compared with the control (the first variant) by a two-sided
 * two-proportion z-test. No winner before every variant has `MINIMUM` exposures and conversions.
 */
export async function experimentsReport(deps: InsightDeps, site: SiteState, range: Range): Promise<ExperimentsReport> {
  await deps.flushCounters();
  const w = windowOf(range, deps.now());
  const [rows, conversions] = await Promise.all([
    deps.insight.decisionBuckets({ tenantId: site.tenantId, siteId: site.id, grain: w.grain, from: w.from, to: w.to }),
    deps.insight.conversions(site.tenantId, site.id, w.from, w.to),
  ]);
  const document = site.live as CompiledSite;
  const experiments = [...document.experiments.values()].map((e) => experimentOf(e, rows, conversions));
  return {
    site: site.id,
    range,
    from: iso(w.from),
    to: iso(w.to),
    minimum: { ...MINIMUM },
    experiments,
  };
}

function experimentOf(
  e: CompiledExperiment,
  rows: readonly DecisionCountBucket[],
  conversions: readonly { userId: string }[],
): ExperimentReport {
  const variants: VariantReport[] = e.variants.map((variant) => ({
    variant,
    exposures: 0,
    conversions: 0,
    rate: 0,
    interval: [0, 0],
    outcomes: {},
  }));
  const byName = new Map(variants.map((v) => [v.variant, v]));
  for (const r of rows) {
    if (r.experiment !== e.name) continue;
    const v = byName.get(r.variant);
    if (v === undefined) continue;
    if (r.feature === "") v.exposures += r.count;
    else {
      const name = `${r.feature}: ${r.outcome}`;
      v.outcomes[name] = (v.outcomes[name] ?? 0) + r.count;
    }
  }
  for (const c of conversions) {
    const v = byName.get(e.assign(c.userId));
    if (v !== undefined) v.conversions++;
  }
  for (const v of variants) {
    v.rate = v.exposures === 0 ? 0 : v.conversions / v.exposures;
    v.interval = wilson(Math.min(v.conversions, v.exposures), v.exposures);
  }
  const control = variants[0] as VariantReport;
  const enough = variants.every(
    (v) => v.exposures >= MINIMUM.exposures && v.conversions >= MINIMUM.conversions && v.conversions <= v.exposures,
  );
  if (enough) {
    for (const v of variants.slice(1)) {
      v.versusControl = twoProportionZTest(control.conversions, control.exposures, v.conversions, v.exposures);
    }
  }
  return {
    experiment: e.name,
    control: control.variant,
    test: "two-proportion z-test, two-sided, 95%",
    enough,
    ...judge(variants, enough),
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const points = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}`;

function judge(
  variants: VariantReport[],
  enough: boolean,
): Pick<ExperimentReport, "verdict" | "winner" | "sentence" | "variants"> {
  const control = variants[0] as VariantReport;
  if (!enough) {
    const short = variants
      .filter((v) => v.exposures < MINIMUM.exposures || v.conversions < MINIMUM.conversions)
      .map((v) => `${v.variant} has ${v.exposures} exposures and ${v.conversions} conversions`);
    return {
      verdict: "too-early",
      winner: null,
      sentence: `Too early to call: ${short.join("; ") || "conversions exceed exposures"}. Each variant needs at least ${MINIMUM.exposures} exposures and ${MINIMUM.conversions} conversions before a difference is judged.`,
      variants,
    };
  }
  // The variant furthest from the control decides the verdict; each comparison is reported.
  let best: VariantReport | null = null;
  for (const v of variants.slice(1)) {
    const t = v.versusControl;
    if (t === undefined || t.p >= ALPHA) continue;
    if (best === null || Math.abs(t.difference) > Math.abs(best.versusControl?.difference ?? 0)) best = v;
  }
  if (best === null) {
    const parts = variants
      .slice(1)
      .map(
        (v) =>
          `${v.variant} converts at ${pct(v.rate)} against ${pct(control.rate)} for ${control.variant} (p = ${(v.versusControl?.p ?? 1).toFixed(3)})`,
      );
    return {
      verdict: "no-difference",
      winner: null,
      sentence: `${parts.join("; ")}: the difference could be chance, so there is no winner yet.`,
      variants,
    };
  }
  const t = best.versusControl as NonNullable<VariantReport["versusControl"]>;
  const better = t.difference > 0;
  return {
    verdict: better ? "better" : "worse",
    winner: better ? best.variant : control.variant,
    sentence: `${best.variant} converts at ${pct(best.rate)} against ${pct(control.rate)} for ${control.variant}: ${points(t.difference)} points (95% interval ${points(t.interval[0] as number)} to ${points(t.interval[1] as number)}), p = ${t.p.toFixed(4)} by a two-proportion z-test. A difference this large is unlikely to be chance: ${better ? best.variant : control.variant} converts better.`,
    variants,
  };
}

/** How many readers hold each value of each meter in its current period (flushed values). */
export async function metersReport(deps: InsightDeps, site: SiteState): Promise<MetersReport> {
  await deps.flushCounters();
  const now = deps.now();
  const document = site.live as CompiledSite;
  const meters = await Promise.all(
    [...document.meters.values()].map(async (m) => {
      const period = m.periodKey(now);
      const values = await deps.insight.meterValues(site.tenantId, site.id, m.name, period, m.kind);
      return {
        meter: m.name,
        kind: m.kind,
        allowance: m.allowance,
        period,
        readers: values.reduce((n, v) => n + v.readers, 0),
        values,
      };
    }),
  );
  return { site: site.id, meters };
}

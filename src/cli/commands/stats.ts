import type { DecisionsReport, ExperimentsReport, FunnelReport, MetersReport } from "../../insight/model";
import { CliError, type Commands } from "../context";

const RANGES = ["1h", "24h", "7d", "30d"];

/**
 * `svc stats <site> [--range 24h]`: the figures of the console's insight page (docs/insight.md):
 * decisions per feature and outcome, the paywall funnel, experiments and meters.
 */
export const statsCommands: Commands = {
  stats: async ({ action, values, tenant, call }) => {
    const site = action;
    if (!site) throw new CliError("usage: svc stats <site> [--range 1h|24h|7d|30d] [--tenant T]");
    const range = values.range ?? "24h";
    if (!RANGES.includes(range)) throw new CliError(`--range must be one of ${RANGES.join(", ")}`);
    const base = `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/insight`;
    const [decisions, funnel, experiments, meters] = (await Promise.all([
      call("GET", `${base}/decisions?range=${range}`),
      call("GET", `${base}/funnel?range=${range}`),
      call("GET", `${base}/experiments?range=${range}`),
      call("GET", `${base}/meters`),
    ])) as [DecisionsReport, FunnelReport, ExperimentsReport, MetersReport];
    return {
      json: { decisions, funnel, experiments, meters },
      text: statsText(decisions, funnel, experiments, meters),
    };
  },
};

function statsText(d: DecisionsReport, f: FunnelReport, e: ExperimentsReport, m: MetersReport): string {
  const lines = [
    `Decisions on ${d.site}, ${d.from} to ${d.to} (${d.range}): ${d.total}`,
    "FEATURE\tOUTCOME\tVARIANT\tVERDICT\tCOUNT",
    ...d.series.map((s) => `${s.feature}\t${s.outcome}\t${s.variant || "-"}\t${s.verdict || "-"}\t${s.total}`),
    "",
    `Funnel per offer (${f.from.slice(0, 10)} to ${f.to.slice(0, 10)})`,
    "OFFER\tWALLED\tSTARTED\tCOMPLETED\tGRANTED",
    ...f.offers.map((o) => `${o.offer || "(none)"}\t${o.walled}\t${o.started}\t${o.completed}\t${o.granted}`),
    `total\t${f.total.walled}\t${f.total.started}\t${f.total.completed}\t${f.total.granted}`,
  ];
  for (const x of e.experiments) {
    lines.push(
      "",
      `Experiment ${x.experiment} (control ${x.control}; ${x.test})`,
      "VARIANT\tEXPOSURES\tCONVERSIONS\tRATE\t95% INTERVAL",
    );
    for (const v of x.variants) {
      const [lo, hi] = v.interval as [number, number];
      lines.push(`${v.variant}\t${v.exposures}\t${v.conversions}\t${pct(v.rate)}\t${pct(lo)} to ${pct(hi)}`);
    }
    lines.push(x.sentence);
  }
  for (const meter of m.meters) {
    lines.push(
      "",
      `Meter ${meter.meter} (${meter.kind}, allowance ${meter.allowance}), period ${meter.period}: ${meter.readers} readers`,
      "VALUE\tREADERS",
    );
    for (const v of meter.values) lines.push(`${v.value}\t${v.readers}`);
  }
  return lines.join("\n");
}

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

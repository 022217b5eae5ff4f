import type {
  DecisionsReport,
  ExperimentsReport,
  FunnelReport,
  FunnelRow,
  MetersReport,
  Range,
} from "../../insight/model";
import { type Html, html } from "../html";
import type { ConsoleSession } from "../model";
import { href, layout } from "./layout";

export interface InsightView {
  readonly site: string;
  readonly range: Range;
  readonly decisions: DecisionsReport;
  readonly funnel: FunnelReport;
  readonly experiments: ExperimentsReport;
  readonly meters: MetersReport;
}

/** The ranges the page offers (the API also takes 1h). */
export const PAGE_RANGES: readonly Range[] = ["24h", "7d", "30d"];

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const seriesName = (s: DecisionsReport["series"][number]) =>
  `${s.feature}: ${s.outcome}${s.variant ? ` (${s.experiment} ${s.variant})` : ""}`;
const bucketLabel = (iso: string, grain: string) =>
  grain === "day" ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;

/**
 * A site's insight: decisions over time, the paywall funnel, experiments and meters. Every
 * figure is a table (readable without script); `client/insight.ts` draws each table marked
 * `data-chart` as a chart beside it, from the table's own cells.
 */
export function insightPage(session: ConsoleSession, view: InsightView) {
  const { decisions: d } = view;
  const ranges = PAGE_RANGES.map(
    (r) =>
      html`<a href="${href("sites", view.site, "insight")}?range=${r}"${r === view.range ? html` aria-current="page"` : ""}>${r === "24h" ? "24 hours" : r === "7d" ? "7 days" : "30 days"}</a>`,
  );
  const unit = d.grain === "day" ? "Day" : d.grain === "hour" ? "Hour" : "Minute";
  return layout(
    `Insight: ${view.site}`,
    html`<p class="muted">From ${d.from} to ${d.to} (UTC). Counted, not sampled; live decisions only (previews and the console's try are not counted). <a href="${href("sites")}">All sites</a></p>
<nav class="ranges" aria-label="Time range">${ranges}</nav>

<h2 id="decisions">Decisions</h2>
<p>${d.total} decisions in this range.</p>
<table id="decisions-totals">
<caption class="muted">Decisions per feature and outcome</caption>
<thead><tr><th scope="col">Feature</th><th scope="col">Outcome</th><th scope="col">Experiment variant</th><th scope="col">Verdict</th><th scope="col">Decisions</th></tr></thead>
<tbody>${
      d.series.length > 0
        ? d.series.map(
            (s) =>
              html`<tr><td>${s.feature}</td><td>${s.outcome}</td><td>${s.variant ? `${s.experiment} ${s.variant}` : "-"}</td><td>${s.verdict || "-"}</td><td>${s.total}</td></tr>`,
          )
        : html`<tr><td colspan="5">No decisions in this range.</td></tr>`
    }</tbody>
</table>
${d.series.length > 0 ? decisionsOverTime(d, unit) : ""}

<h2 id="funnel">Paywall funnel</h2>
<p class="muted">Walled: decisions whose outcome is a <code>deny</code> verdict, by the offer the wall names. Started, completed and granted: checkout sessions by the day they started or completed.</p>
${funnelTables(view.funnel)}

<h2 id="experiments">Experiments</h2>
${view.experiments.experiments.length > 0 ? view.experiments.experiments.map((e) => experimentSection(e)) : html`<p>The live document has no experiments.</p>`}

<h2 id="meters">Meters</h2>
${view.meters.meters.length > 0 ? view.meters.meters.map(meterSection) : html`<p>The live document has no meters.</p>`}`,
    session,
  );
}

function decisionsOverTime(d: DecisionsReport, unit: string): Html {
  return html`<details>
<summary>Decisions per ${unit.toLowerCase()} (table)</summary>
<table id="decisions-over-time" data-chart="time" data-label="Decisions per ${unit.toLowerCase()}">
<thead><tr><th scope="col">${unit} (UTC)</th>${d.series.map((s) => html`<th scope="col">${seriesName(s)}</th>`)}</tr></thead>
<tbody>${d.buckets.map(
    (b, i) =>
      html`<tr><th scope="row" data-x="${Date.parse(b) / 1000}">${bucketLabel(b, d.grain)}</th>${d.series.map((s) => html`<td>${s.counts[i]}</td>`)}</tr>`,
  )}</tbody>
</table>
</details>`;
}

const funnelCells = (r: FunnelRow) =>
  html`<td>${r.walled}</td><td>${r.started}</td><td>${r.completed}</td><td>${r.granted}</td>`;
const FUNNEL_HEAD = html`<th scope="col">Walled</th><th scope="col">Checkouts started</th><th scope="col">Completed</th><th scope="col">Granted</th>`;

function funnelTables(f: FunnelReport): Html {
  const offers = f.offers.length > 0 ? f.offers : [];
  return html`<table id="funnel-offers" data-chart="steps" data-label="Funnel per offer">
<caption class="muted">Per offer, ${f.from.slice(0, 10)} to ${f.to.slice(0, 10)}</caption>
<thead><tr><th scope="col">Offer</th>${FUNNEL_HEAD}</tr></thead>
<tbody>${offers.map((o) => html`<tr><th scope="row">${o.offer || "(no offer)"}</th>${funnelCells(o)}</tr>`)}
<tr><th scope="row">All offers</th>${funnelCells(f.total)}</tr></tbody>
</table>
<details>
<summary>Per day and offer (table)</summary>
<table id="funnel-days">
<thead><tr><th scope="col">Day</th><th scope="col">Offer</th>${FUNNEL_HEAD}</tr></thead>
<tbody>${
    f.days.length > 0
      ? f.days.map((r) => html`<tr><td>${r.day}</td><td>${r.offer || "(no offer)"}</td>${funnelCells(r)}</tr>`)
      : html`<tr><td colspan="6">Nothing in this range.</td></tr>`
  }</tbody>
</table>
</details>`;
}

function experimentSection(e: ExperimentsReport["experiments"][number]): Html {
  const outcomes = [...new Set(e.variants.flatMap((v) => Object.keys(v.outcomes)))].sort();
  return html`<h3>${e.experiment}</h3>
<p class="sentence" data-verdict="${e.verdict}">${e.sentence}</p>
<table id="experiment-${e.experiment}" data-chart="bars" data-label="Conversion rate per variant (%)" data-columns="3">
<caption class="muted">Control: ${e.control}. Test: ${e.test}. Conversions are completed checkouts that granted, credited to the variant the reader is assigned.</caption>
<thead><tr><th scope="col">Variant</th><th scope="col">Exposures</th><th scope="col">Conversions</th><th scope="col">Rate (%)</th><th scope="col">95% interval</th><th scope="col">Against the control</th></tr></thead>
<tbody>${e.variants.map((v) => {
    const [lo, hi] = v.interval as [number, number];
    const t = v.versusControl;
    return html`<tr><th scope="row">${v.variant}</th><td>${v.exposures}</td><td>${v.conversions}</td><td>${(v.rate * 100).toFixed(2)}</td><td>${pct(lo)} to ${pct(hi)}</td><td>${t === undefined ? "-" : `${(t.difference * 100).toFixed(2)} points, p = ${t.p.toFixed(4)}`}</td></tr>`;
  })}</tbody>
</table>
${
  outcomes.length > 0
    ? html`<table>
<caption class="muted">Outcomes the experiment's arms gave</caption>
<thead><tr><th scope="col">Variant</th>${outcomes.map((o) => html`<th scope="col">${o}</th>`)}</tr></thead>
<tbody>${e.variants.map((v) => html`<tr><th scope="row">${v.variant}</th>${outcomes.map((o) => html`<td>${v.outcomes[o] ?? 0}</td>`)}</tr>`)}</tbody>
</table>`
    : ""
}`;
}

function meterSection(m: MetersReport["meters"][number]): Html {
  return html`<h3>${m.meter}</h3>
<p>${m.readers} readers in period ${m.period} (${m.kind} meter, allowance ${m.allowance}).</p>
<table id="meter-${m.meter}" data-chart="bars" data-label="Readers by value">
<thead><tr><th scope="col">Value</th><th scope="col">Readers</th></tr></thead>
<tbody>${
    m.values.length > 0
      ? m.values.map((v) => html`<tr><th scope="row">${v.value}</th><td>${v.readers}</td></tr>`)
      : html`<tr><td colspan="2">No reader has a value yet.</td></tr>`
  }</tbody>
</table>`;
}

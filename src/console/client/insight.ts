// The insight page's charts, bundled by Bun with uPlot (src/console/assets.ts): each table marked
// `data-chart` is drawn from its own cells, so the chart shows exactly the numbers of the table
// (and the table stays the page's content without script). uPlot sizes its elements through the
// CSSOM (element.style), which the CSP's style-src 'self' allows; no inline style attribute.
import uPlot from "uplot";

interface Plotted {
  readonly labels: string[];
  readonly series: { readonly name: string; readonly values: number[] }[];
}

const COLOURS = ["#1f5fbf", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d"];

/**
 * A table as chart data. `time` and `bars`: one point per row (its row header the x label, a
 * `time` row's `data-x` its instant), one series per chosen column. `steps`: the transpose, one
 * point per column and one series per row (a funnel, each offer a line). Rows without a row
 * header (an empty table's note) are skipped.
 */
function read(table: HTMLTableElement): { plotted: Plotted; xs: number[] } | null {
  const heads = [...(table.tHead?.rows[0]?.cells ?? [])].map((c) => c.textContent?.trim() ?? "");
  const chosen = table.dataset.columns
    ? table.dataset.columns.split(",").map(Number)
    : heads.map((_h, i) => i).filter((i) => i > 0);
  const rows: { label: string; x: string | undefined; cells: number[] }[] = [];
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      const head = row.cells[0];
      if (head === undefined || head.tagName !== "TH" || row.cells.length !== heads.length) continue;
      rows.push({
        label: head.textContent?.trim() ?? "",
        x: head.dataset.x,
        cells: chosen.map((c) => Number(row.cells[c]?.textContent ?? "0")),
      });
    }
  }
  if (rows.length === 0) return null;
  if (table.dataset.chart === "steps") {
    const labels = chosen.map((c) => heads[c] ?? "");
    return {
      plotted: { labels, series: rows.map((r) => ({ name: r.label, values: r.cells })) },
      xs: labels.map((_l, i) => i),
    };
  }
  return {
    plotted: {
      labels: rows.map((r) => r.label),
      series: chosen.map((c, k) => ({ name: heads[c] ?? "", values: rows.map((r) => r.cells[k] as number) })),
    },
    xs: rows.map((r, i) => (r.x === undefined ? i : Number(r.x))),
  };
}

function draw(table: HTMLTableElement): void {
  if (table.dataset.drawn === "1") return;
  const data = read(table);
  if (data === null) return;
  table.dataset.drawn = "1";
  const { plotted, xs } = data;
  const kind = table.dataset.chart;
  const time = kind === "time";
  const figure = document.createElement("figure");
  figure.className = "chart";
  figure.setAttribute("role", "img");
  figure.setAttribute("aria-label", `${table.dataset.label ?? "Chart"}: the table below holds the same numbers`);
  figure.dataset.for = table.id;
  // Placed before the table, or before the <details> that folds it away.
  const anchor = table.parentElement?.tagName === "DETAILS" ? table.parentElement : table;
  anchor.parentElement?.insertBefore(figure, anchor);
  const width = Math.max(320, Math.min(1100, (anchor.parentElement?.clientWidth ?? 800) - 16));
  const categories = {
    time: false,
    range: [-0.6, xs.length - 0.4] as uPlot.Range.MinMax,
  };
  const options: uPlot.Options = {
    title: table.dataset.label ?? "",
    width,
    height: 260,
    scales: { x: time ? { time: true } : categories, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [
      time
        ? {}
        : {
            values: (_u, splits) => splits.map((i) => plotted.labels[i] ?? ""),
            splits: () => xs,
          },
      {},
    ],
    series: [
      { label: time ? "time (UTC)" : "" },
      ...plotted.series.map((s, k) => {
        const colour = COLOURS[k % COLOURS.length] as string;
        return kind === "bars"
          ? {
              label: s.name,
              stroke: colour,
              fill: `${colour}99`,
              width: 1,
              paths: uPlot.paths.bars?.({ size: [0.6, 80] }),
            }
          : { label: s.name, stroke: colour, width: 2, points: { show: true, size: 6 } };
      }),
    ],
  };
  const chart = new uPlot(options, [xs, ...plotted.series.map((s) => s.values)] as uPlot.AlignedData, figure);
  // What was drawn, for the browser tests (the same numbers as the table and the API).
  figure.dataset.plotted = JSON.stringify(plotted);
  figure.dataset.points = String(chart.data[0]?.length ?? 0);
}

function drawAll(): void {
  for (const table of document.querySelectorAll<HTMLTableElement>("table[data-chart]")) draw(table);
}

document.addEventListener("DOMContentLoaded", drawAll);
document.addEventListener("htmx:load", drawAll);
if (document.readyState !== "loading") drawAll();

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export interface Asset {
  readonly body: string;
  readonly type: string;
  readonly etag: string;
}

let script: Promise<Asset> | null = null;
let insight: Promise<Asset> | null = null;
let style: Asset | null = null;

const UPLOT_CSS = createRequire(import.meta.url).resolve("uplot/dist/uPlot.min.css");

const etagOf = (body: string) => `"${Bun.hash(body).toString(36)}"`;

/**
 * The console's script: `client/console.ts` with htmx, bundled by Bun on first use and kept in
 * memory (nothing fetched from a CDN, nothing built ahead of `npm start`).
 */
export function consoleScript(): Promise<Asset> {
  script ??= bundle("console.ts").catch((error) => {
    script = null;
    throw error;
  });
  return script;
}

/** The insight page's charts: `client/insight.ts` with uPlot, bundled the same way. */
export function insightScript(): Promise<Asset> {
  insight ??= bundle("insight.ts").catch((error) => {
    insight = null;
    throw error;
  });
  return insight;
}

async function bundle(entry: string): Promise<Asset> {
  const built = await Bun.build({ entrypoints: [join(here, "client", entry)], target: "browser", minify: true });
  if (!built.success || built.outputs.length === 0) {
    throw new Error(`console script ${entry} did not build: ${built.logs.map((l) => l.message).join("; ")}`);
  }
  const body = await (built.outputs[0] as Blob).text();
  return { body, type: "text/javascript; charset=utf-8", etag: etagOf(body) };
}

export function consoleStyle(): Asset {
  if (style === null) {
    // uPlot's own stylesheet follows ours: the charts' layout (its canvas, axes and legend).
    const body = `${readFileSync(join(here, "client", "console.css"), "utf8")}\n${readFileSync(UPLOT_CSS, "utf8")}`;
    style = { body, type: "text/css; charset=utf-8", etag: etagOf(body) };
  }
  return style;
}

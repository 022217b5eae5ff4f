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

const scripts = new Map<string, Promise<Asset>>();
let style: Asset | null = null;

const UPLOT_CSS = createRequire(import.meta.url).resolve("uplot/dist/uPlot.min.css");

const etagOf = (body: string) => `"${Bun.hash(body).toString(36)}"`;

/** One of the console's scripts, bundled by Bun on first use and kept in memory. */
function bundled(entry: string): Promise<Asset> {
  let script = scripts.get(entry);
  if (script === undefined) {
    script = (async () => {
      // An IIFE each: both are classic scripts on one page, so no top-level name may leak.
      const built = await Bun.build({
        entrypoints: [join(here, "client", entry)],
        target: "browser",
        format: "iife",
        minify: true,
      });
      if (!built.success || built.outputs.length === 0) {
        scripts.delete(entry);
        throw new Error(`console script did not build: ${built.logs.map((l) => l.message).join("; ")}`);
      }
      const body = await (built.outputs[0] as Blob).text();
      return { body, type: "text/javascript; charset=utf-8", etag: etagOf(body) };
    })();
    scripts.set(entry, script);
  }
  return script;
}

/**
 * The console's script: `client/console.ts` with htmx, bundled by Bun on first use and kept in
 * memory (nothing fetched from a CDN, nothing built ahead of `npm start`).
 */
export function consoleScript(): Promise<Asset> {
  return bundled("console.ts");
}

/**
 * The document editor (`client/editor.ts`: CodeMirror 6 and the site-document checks), bundled
 * the same way; the console's script loads it only on a page that has an editor.
 */
export function editorScript(): Promise<Asset> {
  return bundled("editor.ts");
}

/** The insight page's charts: `client/insight.ts` with uPlot, bundled the same way. */
export function insightScript(): Promise<Asset> {
  return bundled("insight.ts");
}

export function consoleStyle(): Asset {
  if (style === null) {
    // uPlot's own stylesheet follows ours: the charts' layout (its canvas, axes and legend).
    const body = `${readFileSync(join(here, "client", "console.css"), "utf8")}\n${readFileSync(UPLOT_CSS, "utf8")}`;
    style = { body, type: "text/css; charset=utf-8", etag: etagOf(body) };
  }
  return style;
}

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export interface Asset {
  readonly body: string;
  readonly type: string;
  readonly etag: string;
}

let script: Promise<Asset> | null = null;
let style: Asset | null = null;

const etagOf = (body: string) => `"${Bun.hash(body).toString(36)}"`;

/**
 * The console's script: `client/console.ts` with htmx, bundled by Bun on first use and kept in
 * memory (nothing fetched from a CDN, nothing built ahead of `npm start`).
 */
export function consoleScript(): Promise<Asset> {
  script ??= (async () => {
    const built = await Bun.build({
      entrypoints: [join(here, "client", "console.ts")],
      target: "browser",
      minify: true,
    });
    if (!built.success || built.outputs.length === 0) {
      script = null;
      throw new Error(`console script did not build: ${built.logs.map((l) => l.message).join("; ")}`);
    }
    const body = await (built.outputs[0] as Blob).text();
    return { body, type: "text/javascript; charset=utf-8", etag: etagOf(body) };
  })();
  return script;
}

export function consoleStyle(): Asset {
  if (style === null) {
    const body = readFileSync(join(here, "client", "console.css"), "utf8");
    style = { body, type: "text/css; charset=utf-8", etag: etagOf(body) };
  }
  return style;
}

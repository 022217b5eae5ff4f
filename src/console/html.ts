/**
 * Server-rendered HTML with every interpolated value escaped unless it is already `Html`. Our
 * own, and small on purpose: escaping five characters and joining strings needs no library, and a
 * JSX runtime would add a build step to a handful of pages (docs/console.md).
 */
export class Html {
  /**
   * `styleNonce`: a whole page's CSP nonce for style elements (src/console/pages/layout.ts),
   * which htmlResponse puts in the page's Content-Security-Policy.
   */
  constructor(
    readonly value: string,
    readonly styleNonce?: string,
  ) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function part(value: unknown): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(part).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + (strings[i + 1] as string);
  return new Html(out);
}

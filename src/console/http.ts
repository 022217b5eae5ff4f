import { isStorableText } from "../core/text";
import type { Html } from "./html";

const policy = (styleSrc: string) =>
  `default-src 'none'; script-src 'self'; style-src ${styleSrc}; img-src 'self' data:; connect-src 'self'; ` +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The console's answers: HTML with a strict Content-Security-Policy (our own script and
 * stylesheet only; no inline code, no framing, forms post only to the console), never cached,
 * and no Referer leaving the console's origin (a sign-in link's token is in its URL).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": policy("'self'"),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with a form
  // posted without script, which the origin check must refuse; same-origin still sends no
  // Referer (a sign-in link's token is in its URL) to any other site.
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
  "cross-origin-opener-policy": "same-origin",
});

export function htmlResponse(body: Html, status = 200, cookies: string[] = []): Response {
  const headers = new Headers(SECURITY_HEADERS);
  // A page's style elements need its nonce: the editor's (CodeMirror's base theme, docs/console.md).
  // Still no inline style attribute and no style element without it.
  if (body.styleNonce) headers.set("content-security-policy", policy(`'self' 'nonce-${body.styleNonce}'`));
  headers.set("content-type", "text/html; charset=utf-8");
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  return new Response(body.value, { status, headers });
}

/** 303 to a console page (after a post: the browser then gets the page, a reload posts nothing). */
export function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers(SECURITY_HEADERS);
  headers.set("location", location);
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  return new Response(null, { status: 303, headers });
}

/** A console cookie: this path only, script-proof, never sent cross-site. */
export function consoleCookie(name: string, value: string, maxAgeSeconds: number): string {
  const age = Math.max(0, Math.floor(maxAgeSeconds));
  return `${name}=${value}; Path=/console; Max-Age=${age}${age === 0 ? "; Expires=Thu, 01 Jan 1970 00:00:00 GMT" : ""}; HttpOnly; Secure; SameSite=Strict`;
}

export class FormError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A posted form (urlencoded or multipart) as text fields. Refused (FormError) above `maxBytes`,
 * without a length, or in another content type; a field holding a NUL or a lone surrogate, or a
 * file, is refused too: nothing the console stores can carry one.
 */
export async function formOf(request: Request, maxBytes: number): Promise<Map<string, string>> {
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) {
    throw new FormError(415, "Send the console's forms from its pages.");
  }
  const length = Number(request.headers.get("content-length"));
  if (!Number.isFinite(length) || length <= 0) throw new FormError(411, "The form arrived without a length.");
  if (length > maxBytes) throw new FormError(413, `The form is larger than ${maxBytes} bytes.`);
  let form: Awaited<ReturnType<Request["formData"]>>;
  try {
    form = await request.formData();
  } catch {
    throw new FormError(400, "The form could not be read.");
  }
  const fields = new Map<string, string>();
  for (const [name, value] of form.entries()) {
    if (typeof value !== "string") continue;
    if (!isStorableText(value))
      throw new FormError(400, `The field ${name} holds a character the console cannot store.`);
    if (!fields.has(name)) fields.set(name, value);
  }
  return fields;
}

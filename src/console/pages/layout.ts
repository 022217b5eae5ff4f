import { Html, html } from "../html";
import { CONSOLE_PATH, type ConsoleSession } from "../model";

/** A field error at a JSON pointer or a form field name. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export const hiddenCsrf = (session: { csrf: string }) =>
  html`<input type="hidden" name="_csrf" value="${session.csrf}">`;

export const href = (...parts: string[]) => `${CONSOLE_PATH}/${parts.map(encodeURIComponent).join("/")}`;

/** An error summary that takes the focus when the page shows (client/console.ts). */
export function errorSummary(title: string, errors: readonly FieldError[]): Html {
  return html`<div class="errors" role="alert" tabindex="-1" data-focus id="errors">
  <h2>${title}</h2>
  <ul>${errors.map((e) => html`<li><code>${e.path || "/"}</code>: ${e.message}</li>`)}</ul>
</div>`;
}

export function notice(text: string | Html): Html {
  return html`<div class="notice" role="status" tabindex="-1" data-focus>${text}</div>`;
}

/**
 * htmx without inline styles, eval or script tags (the CSP allows none), no history snapshots
 * (pages may show a key once), and error pages swapped in like any page: a 4xx page is the
 * form again with its errors.
 */
const HTMX_CONFIG = new Html(
  JSON.stringify({
    includeIndicatorStyles: false,
    allowEval: false,
    allowScriptTags: false,
    historyCacheSize: 0,
    // htmx copies an element's style attribute across a swap ("settling"); under the CSP that
    // write is refused and reported, whenever anything (a password manager, a screenshot tool)
    // had set a style on a field with an id. The console needs no settle transitions on style.
    attributesToSettle: ["class", "width", "height"],
    responseHandling: [
      { code: "204", swap: false },
      { code: "[2345]..", swap: true, error: false },
      { code: "...", swap: true },
    ],
  }).replaceAll("'", "&#39;"),
);

/** A fresh CSP nonce: 128 random bits, base64. */
function freshNonce(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
}

/**
 * The whole page: one stylesheet and one script, both from the console itself (strict CSP; the
 * console's script loads the editor and the charts where a page has them). The stylesheet's link carries the page's style nonce, where the editor reads it: under htmx the
 * first page's head (and its policy) stays while bodies are swapped, so the nonce to use is the
 * one in the head, never one in a swapped body.
 */
export function layout(title: string, body: Html, session: ConsoleSession | null): Html {
  const nonce = freshNonce();
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='${HTMX_CONFIG}'>
<title>${title} · svc console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${CONSOLE_PATH}/assets/console.css" nonce="${nonce}">
<script src="${CONSOLE_PATH}/assets/console.js" defer></script>
</head>
<body hx-boost="true">
<a class="skip" href="#main">Skip to content</a>
<header>
<strong>svc console</strong>
${
  session
    ? html`<nav aria-label="Console"><a href="${CONSOLE_PATH}">Sites</a> · <a href="${CONSOLE_PATH}/audit">Audit log</a></nav>
<span class="who">${session.email} (${session.role}, tenant ${session.tenantId})</span>
<form method="post" action="${CONSOLE_PATH}/sign-out">${hiddenCsrf(session)}<button type="submit">Sign out</button></form>`
    : ""
}
</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
  return new Html(page.value, nonce);
}

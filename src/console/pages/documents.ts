import type { DocumentChange } from "../../admin/documents";
import type { ContentKeyInfo } from "../../sites/content-keys";
import { type Html, html } from "../html";
import { CONSOLE_PATH, type ConsoleSession, canWrite } from "../model";
import { errorSummary, type FieldError, hiddenCsrf, href, layout, notice } from "./layout";

export interface DocumentHistoryRow {
  readonly version: number;
  readonly stage: string;
  readonly createdAt: string;
  readonly live: boolean;
  readonly preview: boolean;
}

export interface DocumentsView {
  readonly site: string;
  readonly liveVersion: number | null;
  readonly previewVersion: number | null;
  readonly history: readonly DocumentHistoryRow[];
  /** What the editor holds: the text just posted, else the staged or live document. */
  readonly text: string;
  /** A version opened from the history, shown read-only: as its author wrote it, and normalised. */
  readonly viewed?: { version: number; text: string; normalised: string };
  readonly errors?: FieldError[];
  readonly message?: string | Html;
  readonly changes?: readonly DocumentChange[];
  readonly previewToken?: { token: string; expiresAt: string };
  readonly tryBody?: string;
  readonly tryAnswer?: string;
  readonly tryExplain?: string;
  /** The site's content keys: ids and fingerprints only. */
  readonly contentKeys?: readonly ContentKeyInfo[];
  /** A secret this request's rotation made: shown this once. */
  readonly rotated?: { readonly id: string; readonly secret: string; readonly fingerprint: string };
}

/** The content keys' ids and fingerprints; a writer may rotate one (the new secret is shown once). */
function contentKeysSection(session: ConsoleSession, site: string, view: DocumentsView): Html {
  const write = canWrite(session.role);
  const keys = view.contentKeys ?? [];
  return html`<h2>Content keys</h2>
<p>Secrets are never shown after they are saved: a document lists each key's id and the fingerprint of its secret, and deploys again as it reads. A new key's secret goes in the document once; a known key's secret changes only by rotating it.</p>
${
  view.rotated
    ? html`<div class="secret" role="status" tabindex="-1" data-focus><p>New secret of content key <code>${view.rotated.id}</code> (${view.rotated.fingerprint}). It is shown this once: put it in your CMS now. Descriptors signed with the old secret no longer verify.</p>
<p><code id="content-secret">${view.rotated.secret}</code> <button type="button" data-copy="#content-secret">Copy</button></p></div>`
    : ""
}
<table>
<thead><tr><th scope="col">Key id</th><th scope="col">Fingerprint</th><th scope="col">Made (UTC)</th><th scope="col">Rotated (UTC)</th>${write ? html`<th scope="col">Actions</th>` : ""}</tr></thead>
<tbody>${
    keys.length > 0
      ? keys.map(
          (k) =>
            html`<tr><td><code>${k.id}</code></td><td><code>${k.fingerprint}</code></td><td>${k.createdAt.replace("T", " ").slice(0, 19)}</td><td>${k.rotatedAt === null ? "never" : k.rotatedAt.replace("T", " ").slice(0, 19)}</td>${
              write
                ? html`<td><form method="post" action="${href("sites", site, "content-keys", k.id, "rotate")}" class="inline">${hiddenCsrf(session)}<button type="submit">Rotate ${k.id}</button></form></td>`
                : ""
            }</tr>`,
        )
      : html`<tr><td colspan="5">No content key yet.</td></tr>`
  }</tbody>
</table>`;
}

const json = (value: unknown) => (value === undefined ? "" : JSON.stringify(value));

function changesTable(changes: readonly DocumentChange[]): Html {
  if (changes.length === 0) return notice("No change against the live document.");
  return html`<table id="diff" tabindex="-1" data-focus>
<caption>${changes.length} change${changes.length === 1 ? "" : "s"} against the live document</caption>
<thead><tr><th scope="col">Change</th><th scope="col">At</th><th scope="col">Live</th><th scope="col">New</th></tr></thead>
<tbody>${changes.map(
    (c) =>
      html`<tr><td>${c.op}</td><td><code>${c.path || "/"}</code></td><td><code>${json(c.from).slice(0, 300)}</code></td><td><code>${json(c.to).slice(0, 300)}</code></td></tr>`,
  )}</tbody>
</table>`;
}

export function documentsPage(session: ConsoleSession, view: DocumentsView) {
  const write = canWrite(session.role);
  const site = view.site;
  const history = view.history.map(
    (d) => html`<tr>
<td><a href="${href("sites", site, "documents")}?version=${d.version}">Version ${d.version}</a></td>
<td>${d.live ? "live" : d.preview ? "staged" : d.stage === "preview" ? "was staged" : "was live"}</td>
<td>${d.createdAt.replace("T", " ").slice(0, 19)}</td>
${
  write
    ? html`<td>${
        d.live
          ? ""
          : html`<form method="post" action="${href("sites", site, "documents", String(d.version), "publish")}" class="inline">${hiddenCsrf(session)}<button type="submit">${d.preview ? `Publish version ${d.version}` : `Roll back to version ${d.version}`}</button></form>`
      }</td>`
    : ""
}
</tr>`,
  );
  return layout(
    `Documents of ${site}`,
    html`${view.errors ? errorSummary("The document has errors", view.errors) : ""}
${view.message ? notice(view.message) : ""}
${view.changes ? changesTable(view.changes) : ""}
<p>Live version: <strong>${view.liveVersion ?? "none"}</strong>. Staged version: <strong>${view.previewVersion ?? "none"}</strong>.
${view.previewVersion !== null ? html` <a href="${href("sites", site, "impact")}">Impact of publishing the staged version</a>` : ""}
<a href="${CONSOLE_PATH}/audit?site=${encodeURIComponent(site)}">Audit log of ${site}</a></p>

<h2>History</h2>
<table>
<thead><tr><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Stored (UTC)</th>${write ? html`<th scope="col">Actions</th>` : ""}</tr></thead>
<tbody>${history.length > 0 ? history : html`<tr><td colspan="4">No document deployed yet.</td></tr>`}</tbody>
</table>
${
  view.viewed
    ? html`<h2>Version ${view.viewed.version}</h2>
<p class="muted">As its author wrote it. Diffs compare the normalised form (members sorted by name), below.</p>
<pre id="version-text">${view.viewed.text}</pre>
<details><summary>Normalised form of version ${view.viewed.version}</summary><pre id="version-normalised">${view.viewed.normalised}</pre></details>`
    : ""
}

${contentKeysSection(session, site, view)}

${
  write
    ? html`<h2>New document</h2>
<form method="post" action="${href("sites", site, "documents")}">${hiddenCsrf(session)}
<label for="document-file">Upload a JSON file (fills the text below)</label>
<input type="file" id="document-file" accept="application/json,.json" data-fill="#document">
<label for="document">Site document (JSON)</label>
<textarea id="document" name="document" rows="22" spellcheck="false" data-editor${view.errors ? html` aria-invalid="true" aria-describedby="errors"` : ""}>${view.text}</textarea>
<div class="actions">
<button type="submit" name="op" value="validate">Validate</button>
<button type="submit" name="op" value="diff">Diff against live</button>
<button type="submit" name="op" value="stage">Stage as preview</button>
</div>
</form>`
    : ""
}

${
  view.previewVersion !== null
    ? html`<h2>Preview</h2>
${
  view.previewToken
    ? html`<div class="secret" role="status" tabindex="-1" data-focus><p>Preview token (until ${view.previewToken.expiresAt}); send it as <code>x-svc-preview</code> with a decide to see the staged version:</p>
<p><code id="preview-token">${view.previewToken.token}</code> <button type="button" data-copy="#preview-token">Copy</button></p></div>`
    : ""
}
${write ? html`<form method="post" action="${href("sites", site, "preview-token")}">${hiddenCsrf(session)}<button type="submit">Mint a preview token</button></form>` : ""}
<form method="post" action="${href("sites", site, "documents", "try")}">${hiddenCsrf(session)}
<label for="try-body">Try a decide against the staged version (body of POST /v1/decide; nothing is ticked or recorded)</label>
<textarea id="try-body" name="body" rows="6" spellcheck="false">${view.tryBody ?? '{ "features": [], "deviceId": "console-try" }'}</textarea>
<div class="actions"><button type="submit">Try it</button></div>
</form>
${
  view.tryAnswer
    ? html`<h3>Answer</h3><pre id="try-answer" tabindex="-1" data-focus>${view.tryAnswer}</pre>
<h3>Why</h3><pre id="try-explain">${view.tryExplain ?? ""}</pre>`
    : ""
}`
    : ""
}`,
    session,
  );
}

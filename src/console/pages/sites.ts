import type { SiteRow } from "../../sites/store";
import { html } from "../html";
import { CONSOLE_PATH, type ConsoleSession, canWrite } from "../model";
import { errorSummary, type FieldError, hiddenCsrf, href, layout, notice } from "./layout";

export function sitesPage(
  session: ConsoleSession,
  sites: readonly SiteRow[],
  state: { errors?: FieldError[]; created?: string; newId?: string } = {},
) {
  const write = canWrite(session.role);
  const rows = sites.map(
    (s) => html`<tr>
<td><a href="${href("sites", s.id)}">${s.id}</a></td>
<td>${s.disabled ? "Disabled" : "Enabled"}</td>
<td>${s.liveVersion ?? "none"}</td>
<td>${s.previewVersion ?? "none"}</td>
<td><a href="${href("sites", s.id, "keys")}">Keys</a> · <a href="${href("sites", s.id, "documents")}">Documents</a> · <a href="${href("sites", s.id, "insight")}">Insight</a></td>
${
  write
    ? html`<td><form method="post" action="${href("sites", s.id, s.disabled ? "enable" : "disable")}" class="inline">${hiddenCsrf(session)}<button type="submit">${s.disabled ? "Enable" : "Disable"}</button></form></td>`
    : ""
}
</tr>`,
  );
  return layout(
    "Sites",
    html`${state.errors ? errorSummary("The site was not created", state.errors) : ""}
${state.created ? notice(html`Site <strong>${state.created}</strong> created. Deploy its first document from its Documents page.`) : ""}
<table>
<caption class="muted">Sites of tenant ${session.tenantId}</caption>
<thead><tr><th scope="col">Site</th><th scope="col">Status</th><th scope="col">Live version</th><th scope="col">Staged version</th><th scope="col">Pages</th>${write ? html`<th scope="col">Actions</th>` : ""}</tr></thead>
<tbody>${rows.length > 0 ? rows : html`<tr><td colspan="6">No sites yet.</td></tr>`}</tbody>
</table>
${
  write
    ? html`<h2>Create a site</h2>
<form method="post" action="${CONSOLE_PATH}/sites">${hiddenCsrf(session)}
<label for="site-id">Site id</label>
<input type="text" id="site-id" name="id" required maxlength="128" value="${state.newId ?? ""}"${state.errors ? html` aria-invalid="true" aria-describedby="errors"` : ""}>
<div class="actions"><button type="submit">Create site</button></div>
</form>`
    : ""
}`,
    session,
  );
}

import type { KeyListing } from "../../keys/service";
import { html } from "../html";
import { type ConsoleSession, canWrite } from "../model";
import { errorSummary, type FieldError, hiddenCsrf, href, layout } from "./layout";

const dateOf = (iso: string | null) => (iso === null ? "" : iso.slice(0, 10));

export interface IssueForm {
  name?: string;
  expiresInDays?: string;
  streaming?: boolean;
}

/** The spec's listing columns: Name, first characters, Permissions, Status, Requests, Last used (a date), Expires. */
export function keysPage(
  session: ConsoleSession,
  site: string,
  keys: readonly KeyListing[],
  state: { issued?: KeyListing & { key: string }; errors?: FieldError[]; form?: IssueForm; revoked?: string } = {},
) {
  const write = canWrite(session.role);
  const rows = keys.map(
    (k) => html`<tr>
<td>${k.name}</td><td><code>${k.prefix}</code></td><td>${k.permissions.join(", ") || "none"}</td>
<td>${k.status}</td><td>${k.requests}</td><td>${dateOf(k.lastUsed) || "never"}</td><td>${dateOf(k.expires) || "never"}</td>
${
  write
    ? html`<td>${k.status === "active" ? html`<a href="${href("sites", site, "keys", k.id, "revoke")}" aria-label="Revoke ${k.name}">Revoke</a>` : ""}</td>`
    : ""
}
</tr>`,
  );
  const form = state.form ?? {};
  const invalid = (field: string) =>
    state.errors?.some((e) => e.path === `/${field}`) ? html` aria-invalid="true" aria-describedby="errors"` : "";
  return layout(
    `Keys of ${site}`,
    html`${
      state.issued
        ? html`<div class="secret" role="status" tabindex="-1" data-focus>
<p>Key <strong>${state.issued.name}</strong> issued. Copy its value now: it is shown only once.</p>
<p><code id="new-key">${state.issued.key}</code> <button type="button" data-copy="#new-key">Copy</button></p>
</div>`
        : ""
    }
${state.revoked ? html`<div class="notice" role="status" tabindex="-1" data-focus>Key <strong>${state.revoked}</strong> revoked.</div>` : ""}
${state.errors ? errorSummary("The key was not issued", state.errors) : ""}
<table>
<thead><tr><th scope="col">Name</th><th scope="col">First characters</th><th scope="col">Permissions</th><th scope="col">Status</th><th scope="col">Requests</th><th scope="col">Last used</th><th scope="col">Expires</th>${write ? html`<th scope="col">Actions</th>` : ""}</tr></thead>
<tbody>${rows.length > 0 ? rows : html`<tr><td colspan="8">No keys yet.</td></tr>`}</tbody>
</table>
${
  write
    ? html`<h2>Issue a key</h2>
<form method="post" action="${href("sites", site, "keys")}">${hiddenCsrf(session)}
<label for="key-name">Name</label>
<input type="text" id="key-name" name="name" required maxlength="100" value="${form.name ?? ""}"${invalid("name")}>
<label for="key-expires">Expires in (days, optional)</label>
<input type="number" id="key-expires" name="expiresInDays" min="1" max="3650" value="${form.expiresInDays ?? ""}"${invalid("expiresInDays")}>
<label><input type="checkbox" name="streaming" value="1"${form.streaming ? " checked" : ""}> <code>streaming:write</code> (may post streaming scores)</label>
<div class="actions"><button type="submit">Issue key</button></div>
</form>`
    : ""
}`,
    session,
  );
}

export function revokeConfirmPage(session: ConsoleSession, site: string, key: KeyListing) {
  return layout(
    `Revoke key ${key.name}?`,
    html`<p>Requests with key <strong>${key.name}</strong> (<code>${key.prefix}</code>…) will be refused from now on, in every process. This cannot be undone.</p>
<form method="post" action="${href("sites", site, "keys", key.id, "revoke")}">${hiddenCsrf(session)}
<div class="actions"><button type="submit" class="danger" data-focus>Revoke</button> <a href="${href("sites", site, "keys")}">Cancel</a></div>
</form>`,
    session,
  );
}

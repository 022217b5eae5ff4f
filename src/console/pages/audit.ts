import type { AuditEntry } from "../../audit/model";
import { html } from "../html";
import { CONSOLE_PATH, type ConsoleSession } from "../model";
import { layout } from "./layout";

export function auditPage(
  session: ConsoleSession,
  entries: readonly AuditEntry[],
  site: string | null,
  next: number | null,
) {
  return layout(
    site ? `Audit log of ${site}` : "Audit log",
    html`<table>
<thead><tr><th scope="col">When (UTC)</th><th scope="col">What happened</th><th scope="col">Site</th><th scope="col">Recorded as</th></tr></thead>
<tbody>${
      entries.length > 0
        ? entries.map(
            (e) =>
              html`<tr><td>${e.at.replace("T", " ").slice(0, 19)}</td><td>${e.words}</td><td>${e.site ?? ""}</td><td class="muted"><code>${e.action}</code>${e.target ? html` <code>${e.target}</code>` : ""} by ${e.actor}</td></tr>`,
          )
        : html`<tr><td colspan="4">Nothing recorded yet.</td></tr>`
    }</tbody>
</table>
${next !== null ? html`<p><a href="${CONSOLE_PATH}/audit?before=${next}${site ? `&site=${encodeURIComponent(site)}` : ""}">Older entries</a></p>` : ""}`,
    session,
  );
}

import type { ImpactReport } from "../../impact/replay";
import { html } from "../html";
import type { ConsoleSession } from "../model";
import { href, layout } from "./layout";

export function impactPage(session: ConsoleSession, site: string, report: ImpactReport) {
  return layout(
    `Impact of publishing ${site} version ${report.stagedVersion ?? "?"}`,
    html`<p>${report.samples} recent decide request${report.samples === 1 ? "" : "s"} of this process replayed against live version ${report.liveVersion ?? "none"} and staged version ${report.stagedVersion ?? "none"} (subjects hashed; the requests never leave the server).</p>
<table>
<thead><tr><th scope="col">Feature</th><th scope="col">Answered</th><th scope="col">Would change</th><th scope="col">From → to (count)</th></tr></thead>
<tbody>${
      report.features.length > 0
        ? report.features.map(
            (f) =>
              html`<tr><td>${f.name}</td><td>${f.answered}</td><td>${f.changed}</td><td>${
                f.transitions.length > 0
                  ? html`<ul>${f.transitions.map((t) => html`<li><code>${t.from}</code> → <code>${t.to}</code> (${t.count})</li>`)}</ul>`
                  : "none"
              }</td></tr>`,
          )
        : html`<tr><td colspan="4">No decide request sampled yet.</td></tr>`
    }</tbody>
</table>
<p><a href="${href("sites", site, "documents")}">Back to the documents</a></p>`,
    session,
  );
}

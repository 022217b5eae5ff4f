import { CliError, type Commands, readJsonFile } from "../context";

interface ExplainOut {
  explain: Record<
    string,
    {
      outcome: string;
      type?: string;
      matched: {
        rule: number | string;
        condition?: unknown;
        reason?: string;
        split?: { experiment: string; variant: string };
      };
      rules: {
        index: number;
        result: string;
        facts: { fact: string; source: string; available: boolean; value?: unknown }[];
        meters: { meter: string; available: boolean; remaining?: number; allowance?: number }[];
      }[];
      wouldChange?: string[];
    }
  >;
  unanswered: string[];
  preview: boolean;
  subject: string | null;
  contentVerified: boolean;
}

/** `svc explain <site> <body.json>`: why each feature of a decide body resolves as it does. */
export const explainCommands: Commands = {
  explain: async ({ action, rest, values, tenant, call }) => {
    const [site, file] = [action, rest[0]];
    if (site === undefined || file === undefined) throw new CliError("usage: svc explain <site> <body.json>");
    const body = readJsonFile(file);
    const out = await call(
      "POST",
      `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/explain${values.preview ? "?preview=true" : ""}`,
      body,
    );
    return { json: out, text: explainText(out as ExplainOut) };
  },
};

/** An explanation for a terminal: one block per feature. */
function explainText(out: ExplainOut): string {
  const lines = [
    `subject ${out.subject ?? "(none)"}; content ${out.contentVerified ? "verified" : "not verified"}; ${out.preview ? "preview" : "live"} document`,
  ];
  for (const [name, e] of Object.entries(out.explain)) {
    lines.push("", `${name}: ${e.outcome}${e.type ? ` (${e.type})` : ""}`);
    const m = e.matched;
    if (typeof m.rule === "number") {
      lines.push(`  matched rule ${m.rule}: ${m.condition === null ? "(no condition)" : JSON.stringify(m.condition)}`);
      if (m.split) lines.push(`  split ${m.split.experiment}: variant ${m.split.variant}`);
    } else if (m.rule === "onError") lines.push(`  error slot: ${m.reason}`);
    else lines.push("  no rule matched: default outcome");
    for (const r of e.rules) {
      const facts = r.facts.map((f) =>
        f.available
          ? `${f.fact}=${f.value === undefined ? "absent" : JSON.stringify(f.value)} [${f.source}]`
          : `${f.fact} unavailable`,
      );
      const meters = r.meters.map((x) =>
        x.available ? `meter ${x.meter}: ${x.remaining} of ${x.allowance} left` : `meter ${x.meter} unreadable`,
      );
      lines.push(
        `  rule ${r.index} ${r.result}${[...facts, ...meters].length ? `: ${[...facts, ...meters].join(", ")}` : ""}`,
      );
    }
    if (e.wouldChange?.length) lines.push(`  would change it: ${e.wouldChange.join("; ")}`);
  }
  if (out.unanswered.length > 0) lines.push("", `unanswered: ${out.unanswered.join(", ")}`);
  return lines.join("\n");
}

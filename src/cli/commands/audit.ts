import type { Commands } from "../context";

/** `svc audit`: operator actions, newest first (docs/operations.md). */
export const auditCommands: Commands = {
  audit: async ({ values, call }) => {
    const query = new URLSearchParams();
    // A site belongs to a tenant: --site alone means the default tenant's.
    if (values.tenant !== undefined || values.site !== undefined) query.set("tenant", values.tenant ?? "default");
    if (values.site !== undefined) query.set("site", values.site);
    query.set("limit", values.limit ?? "50");
    const out = (await call("GET", `/admin/audit?${query}`)) as {
      entries: { at: string; words: string; action: string; target: string }[];
    };
    // What happened in words first; the raw action and target after it (--json has every field).
    const lines = out.entries.map((e) => `${e.at}\t${e.words}\t${e.action}\t${e.target}`);
    return { json: out, text: ["AT\tWHAT\tACTION\tTARGET", ...lines].join("\n") };
  },
};

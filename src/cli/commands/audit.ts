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
      entries: { at: string; actor: string; action: string; target: string; summary: string }[];
    };
    const lines = out.entries.map((e) => `${e.at}\t${e.actor}\t${e.action}\t${e.target}\t${e.summary}`);
    return { json: out, text: ["AT\tACTOR\tACTION\tTARGET\tSUMMARY", ...lines].join("\n") };
  },
};

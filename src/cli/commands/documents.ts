import { CliError, type Commands, readJsonFile, readJsonText } from "../context";

/**
 * A site's documents: deploy, diff, the history, publish (or roll back), the impact of the staged
 * one and preview tokens. One-word commands: the action slot holds the site (`svc deploy <site> <file>`).
 */
export const documentCommands: Commands = {
  deploy: async ({ action, rest, values, tenant, call }) => {
    const site = action;
    const file = rest[0];
    if (!site || !file) throw new CliError("usage: svc deploy <site> <file> [--preview] [--tenant T]");
    // The file's text as its author wrote it (the server keeps it beside the parsed document).
    const source = readJsonText(file);
    const out = (await call("POST", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/deploy`, {
      source,
      preview: values.preview ?? false,
    })) as { deployment: { version: number; stage: string } };
    return { json: out, text: `deployed ${site} version ${out.deployment.version} (${out.deployment.stage})` };
  },
  diff: async ({ action, rest, tenant, call }) => {
    const [site, file] = [action, rest[0]];
    if (!site || !file) throw new CliError("usage: svc diff <site> <file> [--tenant T]");
    const document = readJsonFile(file);
    const out = (await call("POST", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/diff`, {
      document,
    })) as { live: number | null; changes: { op: string; path: string; from?: unknown; to?: unknown }[] };
    const lines = out.changes.map((c) => {
      const shown = (v: unknown) => JSON.stringify(v) ?? "";
      if (c.op === "add") return `+ ${c.path || "/"} ${shown(c.to)}`;
      if (c.op === "remove") return `- ${c.path || "/"} ${shown(c.from)}`;
      return `~ ${c.path || "/"} ${shown(c.from)} -> ${shown(c.to)}`;
    });
    const head = `against live ${out.live === null ? "(none)" : `version ${out.live}`}: ${out.changes.length} change(s)`;
    return { json: out, text: [head, ...lines].join("\n") };
  },
  documents: async ({ action, tenant, call }) => {
    const site = action;
    if (!site) throw new CliError("usage: svc documents <site> [--tenant T]");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/documents`)) as {
      documents: { version: number; stage: string; createdAt: string; live: boolean; preview: boolean }[];
    };
    const lines = out.documents.map((d) =>
      [d.version, d.stage, d.createdAt, d.live ? "live" : d.preview ? "staged" : ""].join("\t"),
    );
    return { json: out, text: ["VERSION\tDEPLOYED AS\tCREATED\tNOW", ...lines].join("\n") };
  },
  publish: async ({ action, rest, tenant, call }) => {
    const [site, version] = [action, rest[0]];
    if (!site || !version) throw new CliError("usage: svc publish <site> <version> [--tenant T]");
    const out = (await call(
      "POST",
      `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/documents/${encodeURIComponent(version)}/publish`,
    )) as { deployment: { version: number; previousVersion: number | null } };
    const was = out.deployment.previousVersion;
    return {
      json: out,
      text: `published ${site} version ${out.deployment.version} (live was ${was === null ? "none" : `version ${was}`})`,
    };
  },
  impact: async ({ action, tenant, call }) => {
    const site = action;
    if (!site) throw new CliError("usage: svc impact <site> [--tenant T]");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/impact`)) as {
      samples: number;
      liveVersion: number | null;
      stagedVersion: number | null;
      features: {
        name: string;
        answered: number;
        changed: number;
        transitions: { from: string; to: string; count: number }[];
      }[];
    };
    const lines = [
      `${out.samples} recent request(s) replayed: live version ${out.liveVersion ?? "-"} against staged version ${out.stagedVersion ?? "-"}`,
    ];
    for (const f of out.features) {
      lines.push(`${f.name}: ${f.changed} of ${f.answered} would change`);
      for (const t of f.transitions) lines.push(`  ${t.count}\t${t.from} -> ${t.to}`);
    }
    return { json: out, text: lines.join("\n") };
  },
  "preview-token": async ({ action, values, tenant, call }) => {
    const site = action;
    if (!site) throw new CliError("usage: svc preview-token <site> [--ttl-seconds S] [--tenant T]");
    const ttl = values["ttl-seconds"] ? Number(values["ttl-seconds"]) : undefined;
    const out = (await call("POST", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/preview-tokens`, {
      ttlSeconds: ttl,
    })) as { token: string; expiresAt: string };
    return { json: out, text: `${out.token}\n(expires ${out.expiresAt}; send it as the x-svc-preview header)` };
  },
};

import type { Command, Commands } from "../context";

/** `svc site disable|enable`: the action names both the endpoint and the past tense printed. */
const switchSite: Command = async ({ action, tenant, need, call }) => {
  const [site] = need(1, `site ${action} <site> [--tenant T]`);
  const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/${action}`);
  return { json: out, text: `site ${decodeURIComponent(site ?? "")} ${action}d` };
};

/** `svc site ...`: a tenant's sites. */
export const siteCommands: Commands = {
  "site create": async ({ rest, tenant, need, call }) => {
    const [site] = need(1, "site create <site> [--tenant T]");
    const out = await call("POST", `/admin/tenants/${tenant}/sites`, { id: rest[0] });
    return { json: out, text: `site ${decodeURIComponent(site ?? "")} created` };
  },
  "site list": async ({ tenant, call }) => {
    const out = (await call("GET", `/admin/tenants/${tenant}/sites`)) as {
      sites: { id: string; liveVersion: number | null }[];
    };
    return { json: out, text: out.sites.map((s) => `${s.id}\tlive v${s.liveVersion ?? "-"}`).join("\n") };
  },
  "site disable": switchSite,
  "site enable": switchSite,
};

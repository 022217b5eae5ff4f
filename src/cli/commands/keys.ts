import { CliError, type Commands } from "../context";

/** `svc keys ...`: a site's API keys. */
export const keyCommands: Commands = {
  "keys issue": async ({ values, tenant, need, call }) => {
    const [site] = need(1, "keys issue <site> --name N [--expires-days D] [--permission streaming:write]");
    if (!values.name) throw new CliError("keys issue needs --name");
    const out = (await call("POST", `/admin/tenants/${tenant}/sites/${site}/keys`, {
      name: values.name,
      expiresInDays: values["expires-days"] ? Number(values["expires-days"]) : undefined,
      permissions: values.permission,
    })) as { key: string; id: string };
    return { json: out, text: `${out.key}\n(key id ${out.id}; this value is shown once and cannot be recovered)` };
  },
  "keys list": async ({ tenant, need, call }) => {
    const [site] = need(1, "keys list <site>");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/keys`)) as {
      keys: {
        id: string;
        name: string;
        prefix: string;
        permissions: string[];
        status: string;
        requests: number;
        lastUsed: string | null;
        expires: string | null;
      }[];
    };
    const lines = out.keys.map((k) =>
      [
        k.id,
        k.name,
        `${k.prefix}…`,
        k.permissions.join(","),
        k.status,
        k.requests,
        k.lastUsed ?? "never",
        k.expires ?? "never",
      ].join("\t"),
    );
    return {
      json: out,
      text: ["ID\tNAME\tKEY\tPERMISSIONS\tSTATUS\tREQUESTS\tLAST USED\tEXPIRES", ...lines].join("\n"),
    };
  },
  "keys revoke": async ({ tenant, need, call }) => {
    const [site, keyId] = need(2, "keys revoke <site> <keyId>");
    const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/keys/${keyId}/revoke`);
    return { json: out, text: `key ${decodeURIComponent(keyId ?? "")} revoked` };
  },
};

import { CliError, type Commands } from "../context";

/** `svc tenant ...`: tenants, their public URL, identity provider and outside services. */
export const tenantCommands: Commands = {
  "tenant create": async ({ rest, values, call }) => {
    if (rest.length < 1) {
      throw new CliError("usage: svc tenant create <id> [--host H]... [--default] [--public-url URL]");
    }
    const out = await call("POST", "/admin/tenants", {
      id: rest[0],
      hosts: values.host ?? [],
      default: values.default ?? false,
      publicUrl: values["public-url"],
    });
    return { json: out, text: `tenant ${rest[0]} created` };
  },
  "tenant public-url": async ({ rest, values, need, call }) => {
    const [id] = need(1, "tenant public-url <id> <url> | --clear");
    if (values.clear) {
      const out = await call("DELETE", `/admin/tenants/${id}/public-url`);
      return { json: out, text: `public URL of ${rest[0]} cleared` };
    }
    if (rest.length < 2) throw new CliError("usage: svc tenant public-url <id> <url> | --clear");
    const out = (await call("PUT", `/admin/tenants/${id}/public-url`, { publicUrl: rest[1] })) as {
      publicUrl: string;
    };
    return { json: out, text: `public URL of ${rest[0]} set to ${out.publicUrl}` };
  },
  "tenant list": async ({ call }) => {
    const out = (await call("GET", "/admin/tenants")) as {
      tenants: { id: string; hosts: string[]; isDefault: boolean; publicUrl: string | null }[];
    };
    return {
      json: out,
      text: out.tenants
        .map((t) => `${t.id}${t.isDefault ? " (default)" : ""}\t${t.hosts.join(",")}\t${t.publicUrl ?? "-"}`)
        .join("\n"),
    };
  },
  "tenant idp": async ({ rest, values, need, call }) => {
    const [id] = need(1, "tenant idp <id> --issuer ISS --jwks-url URL | --clear");
    if (values.clear) {
      const out = await call("DELETE", `/admin/tenants/${id}/identity-provider`);
      return { json: out, text: `identity provider of ${rest[0]} disconnected` };
    }
    if (!values.issuer || !values["jwks-url"])
      throw new CliError("tenant idp needs --issuer and --jwks-url (or --clear)");
    const out = await call("PUT", `/admin/tenants/${id}/identity-provider`, {
      issuer: values.issuer,
      jwksUrl: values["jwks-url"],
    });
    return { json: out, text: `identity provider of ${rest[0]} set to ${values.issuer}` };
  },
  "tenant services": async ({ need, call }) => {
    const [id] = need(1, "tenant services <id>");
    const out = (await call("GET", `/admin/tenants/${id}/services`)) as {
      services: { service: string; set: string[] }[];
    };
    return {
      json: out,
      text: out.services.map((s) => `${s.service}\t${s.set.join(",")}`).join("\n") || "no services configured",
    };
  },
  "tenant service": async ({ rest, values, need, call }) => {
    const [id, service] = need(2, "tenant service <id> <service> --set K=V... | --clear");
    if (values.clear) {
      const out = await call("DELETE", `/admin/tenants/${id}/services/${service}`);
      return { json: out, text: `${rest[1]} of ${rest[0]} cleared` };
    }
    if (!values.set?.length) throw new CliError("tenant service needs --set K=V (one per member) or --clear");
    const config: Record<string, string> = {};
    for (const pair of values.set) {
      const at = pair.indexOf("=");
      if (at < 1) throw new CliError(`--set takes K=V (got "${pair}")`);
      config[pair.slice(0, at)] = pair.slice(at + 1);
    }
    const out = (await call("PUT", `/admin/tenants/${id}/services/${service}`, config)) as { set: string[] };
    return { json: out, text: `${rest[1]} of ${rest[0]} set (${out.set.join(", ")})` };
  },
};

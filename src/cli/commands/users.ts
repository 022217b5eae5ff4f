import { CliError, type Commands } from "../context";

/** `svc users|grants|org ...`: a tenant's users, their grants and organizations. */
export const userCommands: Commands = {
  "users create": async ({ rest, tenant, call }) => {
    if (rest.length < 1) throw new CliError("usage: svc users create <email>");
    const out = (await call("POST", `/admin/tenants/${tenant}/users`, { email: rest[0] })) as {
      user: { id: string };
    };
    return { json: out, text: `user ${out.user.id}` };
  },
  "grants add": async ({ rest, values, tenant, need, call }) => {
    const [user, grant] = need(2, "grants add <userId> <grant> [--expires ISO-DATE]");
    const out = await call("POST", `/admin/tenants/${tenant}/users/${user}/grants`, {
      grant: rest[1],
      expiresAt: values.expires,
    });
    return { json: out, text: `grant ${decodeURIComponent(grant ?? "")} added` };
  },
  "grants revoke": async ({ tenant, need, call }) => {
    const [user, grant] = need(2, "grants revoke <userId> <grant>");
    const out = await call("DELETE", `/admin/tenants/${tenant}/users/${user}/grants/${grant}`);
    return { json: out, text: `grant ${decodeURIComponent(grant ?? "")} revoked` };
  },
  "grants list": async ({ tenant, need, call }) => {
    const [user] = need(1, "grants list <userId>");
    const out = (await call("GET", `/admin/tenants/${tenant}/users/${user}/grants`)) as {
      grants: { grant: string; expiresAt: string | null }[];
    };
    return { json: out, text: out.grants.map((g) => `${g.grant}\t${g.expiresAt ?? "never"}`).join("\n") };
  },
  "org create": async ({ rest, values, tenant, call }) => {
    if (rest.length < 1 || !values.slug || !values.owner) {
      throw new CliError("usage: svc org create <name> --slug S --owner <email> [--tenant T]");
    }
    const out = (await call("POST", `/admin/tenants/${tenant}/organizations`, {
      name: rest[0],
      slug: values.slug,
      ownerEmail: values.owner,
    })) as { organization: { id: string; slug: string }; owner: { user: { email: string } } };
    return {
      json: out,
      text: `organization ${out.organization.slug} created (id ${out.organization.id}; owner ${out.owner.user.email})`,
    };
  },
  "org list": async ({ tenant, call }) => {
    const out = (await call("GET", `/admin/tenants/${tenant}/organizations`)) as {
      organizations: { id: string; name: string; slug: string }[];
    };
    return { json: out, text: out.organizations.map((o) => `${o.id}\t${o.slug}\t${o.name}`).join("\n") };
  },
};

import { CliError, type Commands } from "../context";

/** `svc console-user add|list|remove`: who may sign in to /console, through the admin API (docs/console.md). */
export const consoleUserCommands: Commands = {
  "console-user add": async ({ rest, values, tenant, call }) => {
    const email = rest[0];
    if (email === undefined || values.role === undefined) {
      throw new CliError("usage: svc console-user add <email> --role owner|admin|viewer [--tenant T]");
    }
    const out = (await call("POST", `/admin/tenants/${tenant}/console-users`, { email, role: values.role })) as {
      user: { email: string; role: string };
    };
    return {
      json: out,
      text: `console user ${out.user.email} (${out.user.role}) in tenant ${values.tenant ?? "default"}`,
    };
  },
  "console-user list": async ({ tenant, call }) => {
    const out = (await call("GET", `/admin/tenants/${tenant}/console-users`)) as {
      users: { email: string; role: string; createdAt: string }[];
    };
    const lines = out.users.map((u) => `${u.email}\t${u.role}\t${u.createdAt}`);
    return { json: out, text: ["EMAIL\tROLE\tADDED", ...lines].join("\n") };
  },
  "console-user remove": async ({ rest, tenant, call }) => {
    const email = rest[0];
    if (email === undefined) throw new CliError("usage: svc console-user remove <email> [--tenant T]");
    const out = await call("DELETE", `/admin/tenants/${tenant}/console-users/${encodeURIComponent(email)}`);
    return { json: out, text: `console user ${email} removed (their sessions ended)` };
  },
};

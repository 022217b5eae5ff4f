/** `svc console-user add|list|remove`: console users through the admin API (docs/console.md). */
export async function consoleUserCommand(
  action: string | undefined,
  rest: string[],
  options: { tenant: string; role: string | undefined },
  call: (method: string, path: string, body?: unknown) => Promise<unknown>,
  fail: (message: string) => Error,
): Promise<{ json: unknown; text: string }> {
  const base = `/admin/tenants/${encodeURIComponent(options.tenant)}/console-users`;
  switch (action) {
    case "add": {
      const email = rest[0];
      if (email === undefined || options.role === undefined) {
        throw fail("usage: svc console-user add <email> --role owner|admin|viewer [--tenant T]");
      }
      const out = (await call("POST", base, { email, role: options.role })) as {
        user: { email: string; role: string };
      };
      return { json: out, text: `console user ${out.user.email} (${out.user.role}) in tenant ${options.tenant}` };
    }
    case "list": {
      const out = (await call("GET", base)) as { users: { email: string; role: string; createdAt: string }[] };
      const lines = out.users.map((u) => `${u.email}\t${u.role}\t${u.createdAt}`);
      return { json: out, text: ["EMAIL\tROLE\tADDED", ...lines].join("\n") };
    }
    case "remove": {
      const email = rest[0];
      if (email === undefined) throw fail("usage: svc console-user remove <email> [--tenant T]");
      const out = await call("DELETE", `${base}/${encodeURIComponent(email)}`);
      return { json: out, text: `console user ${email} removed (their sessions ended)` };
    }
    default:
      throw fail("usage: svc console-user add|list|remove ...");
  }
}

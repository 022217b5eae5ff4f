import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { siteDocumentJsonSchema } from "../core/document";
import { consoleUserCommand } from "./console-users";
import { demoRequest } from "./demo-request";

export interface CliIo {
  readonly env: Record<string, string | undefined>;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

class CliError extends Error {}

const USAGE = `Usage: svc <command> [options]   (every command takes --json)

  tenant create <id> [--host H]... [--default] [--public-url URL]
  tenant public-url <id> <url>                     origin of the links in the tenant's mail
  tenant public-url <id> --clear                   clear it (see docs/security.md)
  tenant list
  tenant idp <id> --issuer ISS --jwks-url URL      connect the upstream identity provider
  tenant idp <id> --clear                          disconnect it
  tenant services <id>                             outside services configured (member names only)
  tenant service <id> <service> --set K=V...       configure storyblok | recombee | stripe | listmonk
                                                   (a value env:NAME is read from the server's env)
  tenant service <id> <service> --clear            remove that configuration
  site create <site> [--tenant T]
  site list [--tenant T]
  site disable <site> [--tenant T]      (a disabled site answers 404 everywhere)
  site enable <site> [--tenant T]
  deploy <site> <file> [--preview] [--tenant T]
  diff <site> <file> [--tenant T]                what deploying the file would change in the live document
  documents <site> [--tenant T]                   the document history: versions, newest first, live and staged
  publish <site> <version> [--tenant T]           make a stored version live: the staged one, or an
                                                   earlier one to roll back
  impact <site> [--tenant T]                      recent decide requests replayed against the staged
                                                   document: per feature, answers that would change
  preview-token <site> [--ttl-seconds S] [--tenant T]
  keys issue <site> --name N [--expires-days D] [--permission streaming:write] [--tenant T]
  keys list <site> [--tenant T]
  keys revoke <site> <keyId> [--tenant T]
  users create <email> [--tenant T]
  grants add <userId> <grant> [--expires ISO-DATE] [--tenant T]
  grants revoke <userId> <grant> [--tenant T]
  grants list <userId> [--tenant T]
  org create <name> --slug S --owner <email> [--tenant T]
  org list [--tenant T]
  gifts report <site> [--tenant T]              gift links minted and redeemed, per gifter and article
  gifts revoke <site> <giftId> [--tenant T]
  content get <site> <id> [--tenant T]         one content item as last read from the CMS
  content stats <site> [--tenant T]            item counts and the re-read queue (depth, oldest, dead)
  console-user add <email> --role owner|admin|viewer [--tenant T]
                                               who may sign in to /console (docs/console.md)
  console-user list [--tenant T]
  console-user remove <email> [--tenant T]     (also ends their console sessions)
  audit [--site S] [--tenant T] [--limit N]    operator actions, newest first (docs/operations.md)
  explain <site> <body.json> [--preview] [--tenant T]
                              why each feature of a decide body resolves as it does (no meter
                              ticks, no exposures): the matched rule, facts read, meters, and
                              for a deny what would change it
  schema                      print the site-document JSON Schema (no server needed)
  demo-request [--article ID] [--device D] [--free]
                              one decision on the demo site with a signed content descriptor
                              (key: SVC_KEY, else issued once into $SVC_DATA_DIR/demo-key)

Environment: SVC_URL (default http://127.0.0.1:$PORT, PORT default 3000),
SVC_OPERATOR_TOKEN (else read from $SVC_DATA_DIR/operator-token, SVC_DATA_DIR default ./data).
`;

function operatorToken(env: CliIo["env"]): string {
  if (env.SVC_OPERATOR_TOKEN) return env.SVC_OPERATOR_TOKEN;
  const file = join(resolve(env.SVC_DATA_DIR || "./data"), "operator-token");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new CliError(`No operator token: set SVC_OPERATOR_TOKEN or start the server once so it writes ${file}.`);
}

/** Runs one CLI command against the admin API; returns the process exit code. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const asJson = values.json === true;
  if (values.help || positionals.length === 0) {
    (positionals.length === 0 && !values.help ? io.stderr : io.stdout)(USAGE);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  try {
    const result = await dispatch(positionals, values, io.env);
    io.stdout(asJson ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
    return 0;
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr(asJson ? `${JSON.stringify({ error: error.message })}\n` : `svc: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      tenant: { type: "string" },
      host: { type: "string", multiple: true },
      default: { type: "boolean" },
      preview: { type: "boolean" },
      name: { type: "string" },
      "expires-days": { type: "string" },
      permission: { type: "string", multiple: true },
      expires: { type: "string" },
      "ttl-seconds": { type: "string" },
      issuer: { type: "string" },
      "jwks-url": { type: "string" },
      "public-url": { type: "string" },
      clear: { type: "boolean" },
      slug: { type: "string" },
      owner: { type: "string" },
      article: { type: "string" },
      device: { type: "string" },
      free: { type: "boolean" },
      set: { type: "string", multiple: true },
      site: { type: "string" },
      limit: { type: "string" },
      role: { type: "string" },
    },
  });
}

type Values = ReturnType<typeof parse>["values"];

const ONE_WORD = new Set([
  "deploy",
  "diff",
  "documents",
  "publish",
  "impact",
  "preview-token",
  "schema",
  "demo-request",
  "audit",
  "explain",
]);

interface Output {
  json: unknown;
  text: string;
}

async function dispatch(args: string[], values: Values, env: CliIo["env"]): Promise<Output> {
  const [group, action, ...rest] = args;
  const tenant = encodeURIComponent(values.tenant ?? "default");
  const need = (n: number, usage: string) => {
    if (rest.length < n) throw new CliError(`usage: svc ${usage}`);
    return rest.map(encodeURIComponent);
  };
  const call = (method: string, path: string, body?: unknown) => request(env, method, path, body);

  // One-word commands take their arguments right after the word; the rest are "group action".
  const command = group && ONE_WORD.has(group) ? group : `${group} ${action ?? ""}`.trim();
  switch (command) {
    case "demo-request":
      try {
        return await demoRequest(
          { env, call },
          {
            article: values.article ?? "a-1001",
            device: values.device ?? "device-1",
            access: values.free ? "free" : "metered",
          },
        );
      } catch (error) {
        if (error instanceof CliError) throw error;
        throw new CliError((error as Error).message);
      }
    case "console-user add":
    case "console-user list":
    case "console-user remove":
      return consoleUserCommand(
        action,
        rest,
        { tenant: values.tenant ?? "default", role: values.role },
        call,
        (m) => new CliError(m),
      );
    case "audit": {
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
    }
    case "explain": {
      const [site, file] = [action, rest[0]];
      if (site === undefined || file === undefined) throw new CliError("usage: svc explain <site> <body.json>");
      let body: unknown;
      try {
        body = JSON.parse(readFileSync(file, "utf8"));
      } catch (error) {
        throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
      }
      const out = await call(
        "POST",
        `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/explain${values.preview ? "?preview=true" : ""}`,
        body,
      );
      return { json: out, text: explainText(out as ExplainOut) };
    }
    case "schema":
      return { json: siteDocumentJsonSchema(), text: JSON.stringify(siteDocumentJsonSchema(), null, 2) };
    case "tenant create": {
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
    }
    case "tenant public-url": {
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
    }
    case "tenant list": {
      const out = (await call("GET", "/admin/tenants")) as {
        tenants: { id: string; hosts: string[]; isDefault: boolean; publicUrl: string | null }[];
      };
      return {
        json: out,
        text: out.tenants
          .map((t) => `${t.id}${t.isDefault ? " (default)" : ""}\t${t.hosts.join(",")}\t${t.publicUrl ?? "-"}`)
          .join("\n"),
      };
    }
    case "tenant idp": {
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
    }
    case "tenant services": {
      const [id] = need(1, "tenant services <id>");
      const out = (await call("GET", `/admin/tenants/${id}/services`)) as {
        services: { service: string; set: string[] }[];
      };
      return {
        json: out,
        text: out.services.map((s) => `${s.service}\t${s.set.join(",")}`).join("\n") || "no services configured",
      };
    }
    case "tenant service": {
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
    }
    case "site create": {
      const [site] = need(1, "site create <site> [--tenant T]");
      const out = await call("POST", `/admin/tenants/${tenant}/sites`, { id: rest[0] });
      return { json: out, text: `site ${decodeURIComponent(site ?? "")} created` };
    }
    case "site list": {
      const out = (await call("GET", `/admin/tenants/${tenant}/sites`)) as {
        sites: { id: string; liveVersion: number | null }[];
      };
      return { json: out, text: out.sites.map((s) => `${s.id}\tlive v${s.liveVersion ?? "-"}`).join("\n") };
    }
    case "site disable":
    case "site enable": {
      const [site] = need(1, `site ${action} <site> [--tenant T]`);
      const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/${action}`);
      return { json: out, text: `site ${decodeURIComponent(site ?? "")} ${action}d` };
    }
    case "deploy": {
      // `svc deploy <site> <file>`: the action slot holds the site.
      const site = action;
      const file = rest[0];
      if (!site || !file) throw new CliError("usage: svc deploy <site> <file> [--preview] [--tenant T]");
      const document = readJsonFile(file);
      const out = (await call("POST", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/deploy`, {
        document,
        preview: values.preview ?? false,
      })) as { deployment: { version: number; stage: string } };
      return { json: out, text: `deployed ${site} version ${out.deployment.version} (${out.deployment.stage})` };
    }
    case "diff": {
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
    }
    case "documents": {
      const site = action;
      if (!site) throw new CliError("usage: svc documents <site> [--tenant T]");
      const out = (await call("GET", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/documents`)) as {
        documents: { version: number; stage: string; createdAt: string; live: boolean; preview: boolean }[];
      };
      const lines = out.documents.map((d) =>
        [d.version, d.stage, d.createdAt, d.live ? "live" : d.preview ? "staged" : ""].join("\t"),
      );
      return { json: out, text: ["VERSION\tDEPLOYED AS\tCREATED\tNOW", ...lines].join("\n") };
    }
    case "publish": {
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
    }
    case "impact": {
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
    }
    case "preview-token": {
      const site = action;
      if (!site) throw new CliError("usage: svc preview-token <site> [--ttl-seconds S] [--tenant T]");
      const ttl = values["ttl-seconds"] ? Number(values["ttl-seconds"]) : undefined;
      const out = (await call("POST", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/preview-tokens`, {
        ttlSeconds: ttl,
      })) as { token: string; expiresAt: string };
      return { json: out, text: `${out.token}\n(expires ${out.expiresAt}; send it as the x-svc-preview header)` };
    }
    case "keys issue": {
      const [site] = need(1, "keys issue <site> --name N [--expires-days D] [--permission streaming:write]");
      if (!values.name) throw new CliError("keys issue needs --name");
      const out = (await call("POST", `/admin/tenants/${tenant}/sites/${site}/keys`, {
        name: values.name,
        expiresInDays: values["expires-days"] ? Number(values["expires-days"]) : undefined,
        permissions: values.permission,
      })) as { key: string; id: string };
      return { json: out, text: `${out.key}\n(key id ${out.id}; this value is shown once and cannot be recovered)` };
    }
    case "keys list": {
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
    }
    case "keys revoke": {
      const [site, keyId] = need(2, "keys revoke <site> <keyId>");
      const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/keys/${keyId}/revoke`);
      return { json: out, text: `key ${decodeURIComponent(keyId ?? "")} revoked` };
    }
    case "users create": {
      if (rest.length < 1) throw new CliError("usage: svc users create <email>");
      const out = (await call("POST", `/admin/tenants/${tenant}/users`, { email: rest[0] })) as {
        user: { id: string };
      };
      return { json: out, text: `user ${out.user.id}` };
    }
    case "grants add": {
      const [user, grant] = need(2, "grants add <userId> <grant> [--expires ISO-DATE]");
      const out = await call("POST", `/admin/tenants/${tenant}/users/${user}/grants`, {
        grant: rest[1],
        expiresAt: values.expires,
      });
      return { json: out, text: `grant ${decodeURIComponent(grant ?? "")} added` };
    }
    case "grants revoke": {
      const [user, grant] = need(2, "grants revoke <userId> <grant>");
      const out = await call("DELETE", `/admin/tenants/${tenant}/users/${user}/grants/${grant}`);
      return { json: out, text: `grant ${decodeURIComponent(grant ?? "")} revoked` };
    }
    case "grants list": {
      const [user] = need(1, "grants list <userId>");
      const out = (await call("GET", `/admin/tenants/${tenant}/users/${user}/grants`)) as {
        grants: { grant: string; expiresAt: string | null }[];
      };
      return { json: out, text: out.grants.map((g) => `${g.grant}\t${g.expiresAt ?? "never"}`).join("\n") };
    }
    case "org create": {
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
    }
    case "org list": {
      const out = (await call("GET", `/admin/tenants/${tenant}/organizations`)) as {
        organizations: { id: string; name: string; slug: string }[];
      };
      return { json: out, text: out.organizations.map((o) => `${o.id}\t${o.slug}\t${o.name}`).join("\n") };
    }
    case "gifts report": {
      const [site] = need(1, "gifts report <site> [--tenant T]");
      const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/gift-links/report`)) as {
        gifters: { gifter: string; mints: number; redemptions: number }[];
        articles: { contentId: string; mints: number; redemptions: number }[];
      };
      const lines = [
        "GIFTER\tMINTS\tREDEMPTIONS",
        ...out.gifters.map((g) => `${g.gifter}\t${g.mints}\t${g.redemptions}`),
        "",
        "ARTICLE\tMINTS\tREDEMPTIONS",
        ...out.articles.map((a) => `${a.contentId}\t${a.mints}\t${a.redemptions}`),
      ];
      return { json: out, text: lines.join("\n") };
    }
    case "gifts revoke": {
      const [site, giftId] = need(2, "gifts revoke <site> <giftId> [--tenant T]");
      const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/gift-links/${giftId}/revoke`);
      return { json: out, text: `gift link ${decodeURIComponent(giftId ?? "")} revoked` };
    }
    case "content get": {
      const [site, id] = need(2, "content get <site> <id> [--tenant T]");
      const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/content/${id}`)) as { item: unknown };
      return { json: out, text: JSON.stringify(out.item, null, 2) };
    }
    case "content stats": {
      const [site] = need(1, "content stats <site> [--tenant T]");
      const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/content`)) as {
        items: number;
        deleted: number;
        queue: { depth: number; dead: number; oldest: string | null };
      };
      const q = out.queue;
      return {
        json: out,
        text: `items\t${out.items}\ndeleted\t${out.deleted}\nqueued\t${q.depth}\ndead\t${q.dead}\noldest\t${q.oldest ?? "-"}`,
      };
    }
    default:
      throw new CliError(`unknown command "${args.join(" ")}"; see svc --help`);
  }
}

function readJsonFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

async function request(env: CliIo["env"], method: string, path: string, body?: unknown): Promise<unknown> {
  const base = (env.SVC_URL || `http://127.0.0.1:${env.PORT || 3000}`).replace(/\/$/, "");
  let response: Response;
  try {
    response = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${operatorToken(env)}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot reach the server at ${base} (${(error as Error).message}); is it running?`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(`unexpected answer from the server (${response.status})`);
  }
  if (!response.ok) {
    const err = (parsed as { error?: { code?: string; message?: string; details?: unknown } }).error;
    const details = err?.details ? `\n${JSON.stringify(err.details, null, 2)}` : "";
    throw new CliError(`${err?.message ?? `HTTP ${response.status}`} (${err?.code ?? response.status})${details}`);
  }
  return parsed;
}

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

import { parseArgs } from "node:util";
import { auditCommands } from "./commands/audit";
import { backupCommands } from "./commands/backup";
import { consoleUserCommands } from "./commands/console-users";
import { contentCommands } from "./commands/content";
import { contentKeyCommands } from "./commands/content-keys";
import { dbCommands } from "./commands/db";
import { demoRequestCommands } from "./commands/demo-request";
import { documentCommands } from "./commands/documents";
import { explainCommands } from "./commands/explain";
import { giftCommands } from "./commands/gifts";
import { keyCommands } from "./commands/keys";
import { schemaCommands } from "./commands/schema";
import { siteCommands } from "./commands/site";
import { statsCommands } from "./commands/stats";
import { tenantCommands } from "./commands/tenant";
import { userCommands } from "./commands/users";
import { type CliEnv, CliError, type Command, commandContext, type Output, type Values } from "./context";

export interface CliIo {
  readonly env: CliEnv;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

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
  content-keys list <site> [--tenant T]          content keys: ids and fingerprints (secrets are write-only)
  content-keys rotate <site> <keyId> [--secret-file F] [--tenant T]
                                                   replace a key's secret: the file's, or a new one
                                                   printed once
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
  stats <site> [--range 1h|24h|7d|30d] [--tenant T]
                                               decisions, the paywall funnel, experiments and meters
                                               (docs/insight.md; default range 24h)
  db stats                                     the store's size and each table's rows (estimate) and MB
  backup <file>                                the running server's embedded store, consistent (docs/deploying.md)
  restore <file>                               into $SVC_DATA_DIR while it holds no store and no server runs
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
      range: { type: "string" },
      "secret-file": { type: "string" },
    },
  });
}

/** Every command by its full name; a Map, so a name like "constructor" finds nothing. */
const COMMANDS = new Map<string, Command>(
  Object.entries({
    ...tenantCommands,
    ...siteCommands,
    ...documentCommands,
    ...contentKeyCommands,
    ...keyCommands,
    ...userCommands,
    ...giftCommands,
    ...contentCommands,
    ...consoleUserCommands,
    ...auditCommands,
    ...statsCommands,
    ...dbCommands,
    ...backupCommands,
    ...explainCommands,
    ...schemaCommands,
    ...demoRequestCommands,
  }),
);

/** Commands of one word (`deploy`, `schema`): they take their arguments right after the word. */
const ONE_WORD = new Set([...COMMANDS.keys()].filter((name) => !name.includes(" ")));

async function dispatch(args: string[], values: Values, env: CliEnv): Promise<Output> {
  const [group, action, ...rest] = args;
  const context = commandContext(action, rest, values, env);
  // One-word commands take their arguments right after the word; the rest are "group action".
  const command = COMMANDS.get(group && ONE_WORD.has(group) ? group : `${group} ${action ?? ""}`.trim());
  if (command === undefined) throw new CliError(`unknown command "${args.join(" ")}"; see svc --help`);
  return command(context);
}

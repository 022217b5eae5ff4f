import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** A failure `svc` reports on stderr (as `svc: <message>`, or `{"error": ...}` with --json) with exit code 1. */
export class CliError extends Error {}

export type CliEnv = Record<string, string | undefined>;

/** The options run.ts parses: what a command may read besides its positionals. */
export interface Values {
  readonly json?: boolean | undefined;
  readonly help?: boolean | undefined;
  readonly tenant?: string | undefined;
  readonly host?: string[] | undefined;
  readonly default?: boolean | undefined;
  readonly preview?: boolean | undefined;
  readonly name?: string | undefined;
  readonly "expires-days"?: string | undefined;
  readonly permission?: string[] | undefined;
  readonly expires?: string | undefined;
  readonly "ttl-seconds"?: string | undefined;
  readonly issuer?: string | undefined;
  readonly "jwks-url"?: string | undefined;
  readonly "public-url"?: string | undefined;
  readonly clear?: boolean | undefined;
  readonly slug?: string | undefined;
  readonly owner?: string | undefined;
  readonly article?: string | undefined;
  readonly device?: string | undefined;
  readonly free?: boolean | undefined;
  readonly set?: string[] | undefined;
  readonly site?: string | undefined;
  readonly limit?: string | undefined;
  readonly role?: string | undefined;
  readonly range?: string | undefined;
  readonly "secret-file"?: string | undefined;
}

/** What a command prints: `json` with --json, else `text`. */
export interface Output {
  json: unknown;
  text: string;
}

/** An operator-API call: the parsed JSON answer, or a CliError for a failure. */
export type Call = (method: string, path: string, body?: unknown) => Promise<unknown>;

/** Everything a command reads: its arguments, the options, the environment and the operator API. */
export interface CommandContext {
  /**
   * The word after the group ("create" in `tenant create`); for a one-word command (`deploy`),
   * its first argument.
   */
  readonly action: string | undefined;
  /** The arguments after the action, as typed. */
  readonly rest: string[];
  readonly values: Values;
  readonly env: CliEnv;
  /** --tenant (else "default"), URI-encoded for a path. */
  readonly tenant: string;
  /** `rest` URI-encoded for a path, or a usage error when it holds fewer than `n` arguments. */
  readonly need: (n: number, usage: string) => string[];
  readonly call: Call;
  /** An operator-API GET whose answer is bytes (a backup), or a CliError for a failure. */
  readonly download: (path: string) => Promise<Uint8Array>;
}

export type Command = (context: CommandContext) => Promise<Output>;

/** A command group's commands by their full name ("tenant create", "deploy"). */
export type Commands = Readonly<Record<string, Command>>;

/** The context of one command line: `action` and `rest` are what follows its group word. */
export function commandContext(
  action: string | undefined,
  rest: string[],
  values: Values,
  env: CliEnv,
): CommandContext {
  return {
    action,
    rest,
    values,
    env,
    tenant: encodeURIComponent(values.tenant ?? "default"),
    need: (n, usage) => {
      if (rest.length < n) throw new CliError(`usage: svc ${usage}`);
      return rest.map(encodeURIComponent);
    },
    call: (method, path, body) => request(env, method, path, body),
    download: async (path) => new Uint8Array(await (await send(env, "GET", path)).arrayBuffer()),
  };
}

/** A JSON file's text, checked to parse (a CliError naming the file when it does not). */
export function readJsonText(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
    JSON.parse(text);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  return text;
}

export function readJsonFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

function operatorToken(env: CliEnv): string {
  if (env.SVC_OPERATOR_TOKEN) return env.SVC_OPERATOR_TOKEN;
  const file = join(resolve(env.SVC_DATA_DIR || "./data"), "operator-token");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new CliError(`No operator token: set SVC_OPERATOR_TOKEN or start the server once so it writes ${file}.`);
}

async function request(env: CliEnv, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await send(env, method, path, body);
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(`unexpected answer from the server (${response.status})`);
  }
}

/** One operator-API request: the answer when it succeeded, else a CliError with the error envelope's message. */
async function send(env: CliEnv, method: string, path: string, body?: unknown): Promise<Response> {
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
  if (response.ok) return response;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(`unexpected answer from the server (${response.status})`);
  }
  const err = (parsed as { error?: { code?: string; message?: string; details?: unknown } }).error;
  const details = err?.details ? `\n${JSON.stringify(err.details, null, 2)}` : "";
  throw new CliError(`${err?.message ?? `HTTP ${response.status}`} (${err?.code ?? response.status})${details}`);
}

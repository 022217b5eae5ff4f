/**
 * The decide server as a separate process (`bun src/main.ts`), on embedded Postgres in a fresh
 * data folder, or on a fresh database of the Postgres server named by DATABASE_URL. Operated
 * through the CLI and the admin API like any deployment.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScratchDatabase } from "../db/scratch-database";
import { onCleanup, track } from "./proc";

export const ROOT = join(import.meta.dir, "..");

/**
 * The environment `npm start` sets before it runs the server: the leading `NAME=value` words of
 * the root's `scripts.start` (package.json), a `${NAME:-default}` read as its default (what the
 * caller's own environment sets still wins: see the pass-through below). So the bench runs each
 * checkout as its own `npm start` does, an earlier commit's included.
 */
export function startScriptEnv(root: string): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts?: { start?: string } };
  const env: Record<string, string> = {};
  for (const word of (pkg.scripts?.start ?? "").split(/\s+/)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(?:\$\{\1:-([^}]*)\}|(\S*))$/.exec(word);
    if (m === null) break;
    env[m[1] as string] = m[2] ?? m[3] ?? "";
  }
  return env;
}

export interface ServerHandle {
  readonly label: string;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  readonly dataDir: string;
  readonly store: "embedded" | "postgres";
  readonly env: Record<string, string>;
  /** The checkout it runs from; its CLI is the one that operates it. */
  readonly root: string;
  output(): string;
  /** SIGTERM (the server flushes and exits), SIGKILL after `graceMs`; resolves to the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

export interface StartOptions {
  label: string;
  /** A Postgres server: a fresh database is created on it for this process and dropped at exit. */
  databaseUrl?: string;
  /** Write a .cpuprofile into this folder when the process exits. */
  profileDir?: string;
  startTimeoutMs?: number;
  /** More environment for the server (e.g. `SVC_FLUSH_INTERVAL_MS`), over the bench's own. */
  env?: Record<string, string>;
  /** A stopped server whose data (folder or database) and operator token this one takes over. */
  reuse?: ServerHandle;
  /** Run on these CPUs only (`taskset -c`, e.g. "0"), as the pinned bench does. */
  cpus?: string;
  /** The checkout whose `src/main.ts` runs (another commit's worktree); this one by default. */
  root?: string;
  /** Run with --smol, as `npm start` does (the default); false: without it. */
  smol?: boolean;
  /** Also append everything the server prints to this file (e.g. `BUN_JSC_logGC=1`'s lines). */
  logFile?: string;
}

export async function startDecideServer(options: StartOptions): Promise<ServerHandle> {
  const reuse = options.reuse;
  let dataDir: string;
  if (reuse) dataDir = reuse.dataDir;
  else {
    const created = mkdtempSync(join(tmpdir(), `svc-bench-${options.label}-`));
    onCleanup(() => rmSync(created, { recursive: true, force: true }));
    dataDir = created;
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? tmpdir(),
    PORT: "0",
    HOST: "127.0.0.1",
    SVC_DATA_DIR: dataDir,
    SVC_SEED_DEMO: "0",
    // "listening" (with the port) is an info line; decide logs nothing per request at info.
    SVC_LOG_LEVEL: "info",
    SVC_OPERATOR_TOKEN: reuse?.env.SVC_OPERATOR_TOKEN ?? randomBytes(24).toString("base64url"),
    // The transport under test (README, Configuration): node:http by default, or Bun.serve.
    ...(process.env.SVC_HTTP_SERVER ? { SVC_HTTP_SERVER: process.env.SVC_HTTP_SERVER } : {}),
    // The runtime threads' scheduling (default normal; the full runs before issue 28 had idle).
    ...(process.env.SVC_RUNTIME_THREADS ? { SVC_RUNTIME_THREADS: process.env.SVC_RUNTIME_THREADS } : {}),
    // The decide thread (docs/decide-thread.md) for any scenario: `SVC_DECIDE_THREAD=on npm run bench ...`.
    ...(process.env.SVC_DECIDE_THREAD ? { SVC_DECIDE_THREAD: process.env.SVC_DECIDE_THREAD } : {}),
    // The runtime settings `npm start` gives (the root's package.json), under what a run sets.
    ...startScriptEnv(options.root ?? reuse?.root ?? ROOT),
    // The runtime's own tuning knobs pass through (JavaScriptCore's options, mimalloc's), so a run
    // can try them: e.g. `BUN_JSC_logGC=1`, `MIMALLOC_PURGE_DELAY=1000`.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (e): e is [string, string] => /^(BUN_JSC_|MIMALLOC_)/.test(e[0]) && e[1] !== undefined,
      ),
    ),
    ...options.env,
  };
  let store: ServerHandle["store"] = "embedded";
  if (reuse?.env.DATABASE_URL) {
    env.DATABASE_URL = reuse.env.DATABASE_URL;
    store = "postgres";
  } else if (options.databaseUrl) {
    const name = `svc_bench_${options.label.replace(/[^a-z0-9]/gi, "_")}_${Date.now()}_${process.pid}`.toLowerCase();
    const db = await createScratchDatabase(options.databaseUrl, name);
    onCleanup(db.drop);
    env.DATABASE_URL = db.url;
    store = "postgres";
  }
  const argv = options.cpus ? ["taskset", "-c", options.cpus, process.execPath] : [process.execPath];
  if (options.profileDir) {
    argv.push("--cpu-prof", `--cpu-prof-dir=${options.profileDir}`);
    // `BENCH_PROFILE_INTERVAL_US`: a finer sampling interval than the profiler's 1 ms.
    if (process.env.BENCH_PROFILE_INTERVAL_US)
      argv.push(`--cpu-prof-interval=${process.env.BENCH_PROFILE_INTERVAL_US}`);
  }
  // The same runtime flags as `npm start` (package.json): --smol collects garbage more often.
  argv.push(...(options.smol === false ? [] : ["--smol"]), "src/main.ts");
  const child = track(
    Bun.spawn(argv, { cwd: options.root ?? reuse?.root ?? ROOT, env, stdout: "pipe", stderr: "pipe" }),
  );

  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      if (options.logFile !== undefined) appendFileSync(options.logFile, chunk);
      out += decoder.decode(chunk);
      if (out.length > 65_536) out = out.slice(-32_768);
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  let port = 0;
  while (Date.now() < deadline) {
    const match = out.match(/"message":"listening","port":(\d+)/);
    if (match) {
      port = Number(match[1]);
      break;
    }
    if (child.exitCode !== null) throw new Error(`server ${options.label} exited early:\n${out}`);
    await Bun.sleep(25);
  }
  if (!port) {
    child.kill("SIGKILL");
    throw new Error(`server ${options.label} did not start in time:\n${out}`);
  }
  return {
    label: options.label,
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    dataDir,
    store,
    env,
    root: options.root ?? reuse?.root ?? ROOT,
    output: () => out,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const code = await Promise.race([child.exited, Bun.sleep(graceMs).then(() => undefined)]);
      if (code === undefined) {
        child.kill("SIGKILL");
        await child.exited;
        return null;
      }
      return code;
    },
  };
}

/** Runs the operator CLI (`bun src/cli/main.ts <args> --json`) against the server. */
export async function cli<T>(server: ServerHandle, args: string[]): Promise<T> {
  const child = track(
    Bun.spawn([process.execPath, "src/cli/main.ts", ...args, "--json"], {
      cwd: server.root,
      env: {
        PATH: server.env.PATH ?? "",
        SVC_URL: server.url,
        SVC_DATA_DIR: server.dataDir,
        SVC_OPERATOR_TOKEN: server.env.SVC_OPERATOR_TOKEN ?? "",
      },
      stdout: "pipe",
      stderr: "pipe",
    }),
  );
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`svc ${args.join(" ")} failed (${code}): ${stderr.trim() || stdout.trim()}`);
  return JSON.parse(stdout) as T;
}

/** One admin API call with the operator token (for bulk work the CLI would do one process at a time). */
export async function admin<T>(server: ServerHandle, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.url}/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${server.env.SVC_OPERATOR_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} /admin${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

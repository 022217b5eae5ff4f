import { join } from "node:path";
import { scratchDir } from "./scratch-dirs";

const root = join(import.meta.dir, "..", "..");

export interface ServerProcess {
  pid: number;
  port: number;
  url: string;
  output: () => string;
  /** The first match of `pattern` in the output, as soon as it is printed; null at the deadline or once the process exits without it. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray | null>;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/** Starts `bun src/main.ts` as a separate process on a free port and waits until it listens. */
export async function startServerProcess(
  env: Record<string, string>,
  options: { onOutput?: (output: string) => void; startTimeoutMs?: number } = {},
): Promise<ServerProcess> {
  const child = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      SVC_FLUSH_INTERVAL_MS: "100",
      SVC_STATS_FLUSH_INTERVAL_MS: "100",
      // `SVC_TEST_DECIDE_THREAD=on npm test ...`: every server process with the decide thread
      // (docs/decide-thread.md), where a test does not choose itself.
      ...(process.env.SVC_TEST_DECIDE_THREAD === "on" ? { SVC_DECIDE_THREAD: "on" } : {}),
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  // Waiters run on each chunk of output: tests wait on what the server prints, not on time.
  const watchers = new Set<() => void>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      out += decoder.decode(chunk);
      options.onOutput?.(out);
      for (const watch of watchers) watch();
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);
  const waitForOutput = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpMatchArray | null>((resolve) => {
      const done = (match: RegExpMatchArray | null) => {
        watchers.delete(watch);
        clearTimeout(timer);
        resolve(match);
      };
      const watch = () => {
        const match = out.match(pattern);
        if (match) done(match);
        else if (child.exitCode !== null) done(null);
      };
      const timer = setTimeout(() => done(out.match(pattern)), timeoutMs);
      watchers.add(watch);
      void child.exited.then(watch);
      watch();
    });
  const listening = await waitForOutput(/"message":"listening","port":(\d+)/, options.startTimeoutMs ?? 30_000);
  // The first-run seed prints after "listening": callers wait for what they need of it.
  const port = listening ? Number(listening[1]) : 0;
  if (!port && child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
  if (!port) throw new Error(`server did not start:\n${out}`);
  return {
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    waitForOutput,
    async stop(signal = "SIGTERM") {
      child.kill(signal);
      return child.exited;
    },
  };
}

export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script (path from the project root, then its arguments) with this Bun as a separate
 * process until it exits. Without `env` the child gets this process' environment.
 */
export async function runBun(args: string[], env?: Record<string, string>): Promise<ProcessResult> {
  const child = Bun.spawn([process.execPath, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/** Runs the CLI as a separate process, as an operator would. */
export function runCli(args: string[], env: Record<string, string>): Promise<ProcessResult> {
  return runBun(["src/cli/main.ts", ...args], { PATH: process.env.PATH ?? "", ...env });
}

/** A temporary folder, removed once every test file has run (test/preload.ts). */
export function tempDir(prefix = "svc-proc-"): string {
  return scratchDir(prefix);
}

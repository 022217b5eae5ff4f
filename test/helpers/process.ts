import { join } from "node:path";
import { scratchDir } from "./scratch-dirs";

const root = join(import.meta.dir, "..", "..");

export interface ServerProcess {
  pid: number;
  port: number;
  url: string;
  output: () => string;
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
    env: { PATH: process.env.PATH ?? "", PORT: "0", HOST: "127.0.0.1", SVC_FLUSH_INTERVAL_MS: "100", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      out += decoder.decode(chunk);
      options.onOutput?.(out);
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  let port = 0;
  while (Date.now() < deadline) {
    const match = out.match(/"message":"listening","port":(\d+)/);
    if (match) {
      port = Number(match[1]);
      // The first-run seed prints after "listening": wait for the server to answer.
      break;
    }
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    await Bun.sleep(50);
  }
  if (!port) throw new Error(`server did not start:\n${out}`);
  return {
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
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

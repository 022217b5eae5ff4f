/**
 * Saturation and ceiling: the same wrk load (closed loop, same connections, same pre-built
 * requests rotating over many keys) against the decide server and against a bare Bun.serve in
 * its own process, so decide's throughput reads as a share of what Bun itself can do here.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { track } from "./proc";
import { ROOT } from "./server";
import { BENCH_SITE } from "./site";
import { runWrk, type WrkResult } from "./wrk";

export const WRK_GENERATOR = "wrk (Debian package, closed loop, Lua rotating pre-built requests)";

export interface LoadFiles {
  keysFile: string;
  bodiesFile: string;
}

export function writeLoadFiles(workDir: string, keys: readonly string[], bodies: readonly string[]): LoadFiles {
  const keysFile = join(workDir, "wrk-keys.txt");
  const bodiesFile = join(workDir, "wrk-bodies.txt");
  writeFileSync(keysFile, `${keys.join("\n")}\n`);
  writeFileSync(bodiesFile, `${bodies.join("\n")}\n`);
  return { keysFile, bodiesFile };
}

export interface ClosedLoopOptions {
  port: number;
  pid: number;
  files: LoadFiles;
  workDir: string;
  threads: number;
  connections: number;
  warmupS: number;
  durationS: number;
}

/**
 * A short warm-up (JIT, caches, meter entries), then the measured run (`around` wraps it alone,
 * e.g. to note when it ran).
 */
export async function closedLoop(
  o: ClosedLoopOptions,
  around: (run: () => Promise<WrkResult>) => Promise<WrkResult> = (run) => run(),
): Promise<WrkResult & { generator: string }> {
  const common = {
    url: `http://127.0.0.1:${o.port}`,
    threads: o.threads,
    connections: o.connections,
    site: BENCH_SITE,
    workDir: o.workDir,
    serverPid: o.pid,
    ...o.files,
  };
  if (o.warmupS > 0) await runWrk({ ...common, durationS: o.warmupS });
  const result = await around(() => runWrk({ ...common, durationS: o.durationS }));
  return { generator: WRK_GENERATOR, ...result };
}

export interface CeilingServer {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** Starts `bun bench/ceiling-server.ts` answering `bodyFile`'s content to every request. */
export async function startCeilingServer(bodyFile: string): Promise<CeilingServer> {
  const child = track(
    Bun.spawn([process.execPath, "bench/ceiling-server.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PORT: "0", CEILING_BODY_FILE: bodyFile },
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  const reader = child.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 15_000;
  let pending = reader.read();
  while (Date.now() < deadline) {
    const chunk = await Promise.race([pending, Bun.sleep(500).then(() => null)]);
    if (chunk === null) {
      if (child.exitCode !== null) break;
      continue;
    }
    if (chunk.done) break;
    out += new TextDecoder().decode(chunk.value);
    pending = reader.read();
    const match = out.match(/"port":(\d+)/);
    if (match) {
      // Keep draining so the pipe never fills.
      void (async () => {
        while (!(await pending).done) pending = reader.read();
      })();
      return {
        pid: child.pid,
        port: Number(match[1]),
        async stop() {
          child.kill("SIGTERM");
          await Promise.race([child.exited, Bun.sleep(3_000)]);
          if (child.exitCode === null) child.kill("SIGKILL");
        },
      };
    }
  }
  child.kill("SIGKILL");
  throw new Error(`ceiling server did not start: ${out}`);
}

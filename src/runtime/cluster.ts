import cluster, { type Worker } from "node:cluster";
import { createServer } from "node:net";
import type { Config } from "../config";
import type { Logger } from "../logger";

/** This process' index in a cluster (SVC_WORKERS above 1), or null when it serves alone. */
export function workerIndex(): number | null {
  if (!cluster.isWorker) return null;
  const index = Number(process.env.SVC_WORKER_INDEX);
  return Number.isInteger(index) ? index : null;
}

/** True in the process that starts and watches the workers instead of serving. */
export function isClusterPrimary(config: Config): boolean {
  return config.workers > 1 && cluster.isPrimary;
}

/** A worker that dies sooner than this after its start is restarted after a growing delay. */
const STEADY_MS = 10_000;
const FIRST_DELAY_MS = 500;
const LONGEST_DELAY_MS = 30_000;
/** How long a stop waits for the workers' own graceful stop before it kills them. */
const STOP_LIMIT_MS = 30_000;

/**
 * The cluster's primary (SVC_WORKERS=N on one host): it opens the store once (`prepare`: the
 * migrations run here, not in N processes at once), forks N copies of this script that share the
 * port (node:cluster: on Linux each worker listens with SO_REUSEPORT and the kernel spreads the
 * connections), restarts a worker that dies, and on SIGTERM/SIGINT stops them all gracefully
 * (each flushes its counters) before it exits. It serves no request itself.
 */
export async function runClusterPrimary(config: Config, logger: Logger, prepare: () => Promise<void>): Promise<void> {
  await prepare();
  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const started = new Map<number, number>();
  const delays = new Map<number, number>();
  const byWorker = new Map<Worker, number>();
  let stopping = false;

  const fork = (index: number) => {
    const worker = cluster.fork({ SVC_WORKER_INDEX: String(index), PORT: String(port) });
    byWorker.set(worker, index);
    started.set(index, Date.now());
  };

  cluster.on("exit", (worker, code, signal) => {
    const index = byWorker.get(worker);
    byWorker.delete(worker);
    if (index === undefined || stopping) return;
    const lived = Date.now() - (started.get(index) ?? 0);
    const delay =
      lived >= STEADY_MS ? FIRST_DELAY_MS : Math.min((delays.get(index) ?? 0) * 2 || FIRST_DELAY_MS, LONGEST_DELAY_MS);
    delays.set(index, delay);
    logger.error("worker exited; restarting it", { worker: index, code, signal, restartInMs: delay });
    setTimeout(() => {
      if (!stopping) fork(index);
    }, delay);
  });

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping the workers", { signal, workers: byWorker.size });
    const exits = [...byWorker.keys()].map(
      (worker) =>
        new Promise<number>((done) => {
          if (worker.isDead()) return done(worker.process.exitCode ?? 1);
          worker.once("exit", (code) => done(code ?? 1));
          worker.process.kill("SIGTERM");
        }),
    );
    const killer = setTimeout(() => {
      for (const worker of byWorker.keys()) worker.process.kill("SIGKILL");
    }, STOP_LIMIT_MS);
    const codes = await Promise.all(exits);
    clearTimeout(killer);
    const clean = codes.every((code) => code === 0);
    logger.info("workers stopped", { clean });
    process.exit(clean ? 0 : 1);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  for (let index = 0; index < config.workers; index++) fork(index);
  logger.info("cluster started", { workers: config.workers, port });
}

/** A port the OS has free on the host now (PORT=0 in a cluster: every worker must share one). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

import { readFileSync } from "node:fs";
import type { Database } from "../db/client";
import { DataFolderInUseError } from "../db/data-folder-lock";
import { openDatabaseRetrying, openFailureMessage } from "../db/open-retrying";
import { keepFilesPrivate } from "../db/private-files";
import { createApp, listen } from "./app";
import { type Config, ConfigError, loadConfig } from "./config";
import { signContentPayload } from "./core/verifier";
import { openDecideThread } from "./decide-thread/start";
import { createDeps, startDeps, stopDeps } from "./deps";
import { errorText } from "./infra/error-text";
import { createLogger, type Logger } from "./logger";
import { yieldBackgroundThreads } from "./runtime/background-threads";
import { isClusterPrimary, runClusterPrimary, workerIndex } from "./runtime/cluster";
import { collectWhenIdle } from "./runtime/idle-collection";
import { demoDocumentPath, seedDemo } from "./seed";

// Before anything writes the data folder: every file the server creates is private (0600/0700).
keepFilesPrivate();

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

const index = workerIndex();
const logger = createLogger(
  config.logLevel,
  undefined,
  index === null ? undefined : { worker: index },
  config.logFormat,
);
if (isClusterPrimary(config)) {
  // The primary runs the migrations once, then forks the workers that serve.
  await runClusterPrimary(config, logger, async () => {
    const database = await openServerDatabase(config, logger);
    await database?.close();
  });
} else {
  await serve();
}

/**
 * Opens the store, starts the counters and timers, listens, and stops gracefully on a signal.
 * The signals are taken from the start: while the store is still being opened (waiting for
 * Postgres, say) one stops the process at once, as before, since nothing is held yet; once it is
 * open, one that comes while the server is still starting (a cluster's primary stopping a worker
 * it has just restarted) stops it gracefully as soon as it has started, not half-started.
 */
async function serve(): Promise<void> {
  let opened = false;
  let shutdown: ((signal: string) => Promise<void>) | null = null;
  let pending: string | null = null;
  const onSignal = (signal: string) => {
    if (shutdown !== null) void shutdown(signal);
    else if (opened) pending ??= signal;
    else process.exit(0);
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  const deps = await createDeps(config, { logger, database: await openServerDatabase(config, logger) }).catch(
    (error: unknown) => {
      if (!(error instanceof DataFolderInUseError)) throw error;
      console.error(error.message);
      process.exit(1);
    },
  );
  opened = true;
  await startDeps(deps);
  // With tracing on, every request is served here (a span per request needs the app's thread).
  const thread = config.decideThread && deps.tracing === null ? openDecideThread(deps) : null;
  const app =
    thread === null ? listen(createApp(deps), deps) : await thread.serve(createApp({ ...deps, ...thread.routes }));
  const port = app.server?.port ?? config.port;
  deps.logger.info("listening", { port, store: deps.database.kind, dataDir: config.dataDir, pid: process.pid });
  const runtimeThreads = config.runtimeThreads === "idle" ? yieldBackgroundThreads(deps.logger) : undefined;
  const idleCollection = collectWhenIdle(() => deps.requests.total);

  // In a cluster only the first worker seeds, so two never race to create the demo tenant.
  if (config.seedDemo && (index === null || index === 0)) {
    const demo = await seedDemo(deps, () =>
      deps.logger.info("empty store: seeding the demo (tenant default, site demo)"),
    );
    if (demo) printDemo(demo, port);
  }

  let stopping = false;
  shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info("stopping", { signal });
    try {
      runtimeThreads?.stop();
      idleCollection.stop();
      await app.stop();
      await stopDeps(deps);
      process.exit(0);
    } catch (error) {
      deps.logger.error("unclean stop", { error: errorText(error) });
      process.exit(1);
    }
  };
  if (pending !== null) void shutdown(pending);
}

/** Printed once: the key value is not stored and cannot be shown again. */
function printDemo(demo: { key: string; site: string }, port: number): void {
  const decide = `curl -s http://127.0.0.1:${port}/v1/decide -H 'x-svc-site-id: ${demo.site}' -H 'Authorization: Bearer ${demo.key}' -H 'content-type: application/json'`;
  const article = demoArticle("a-1001");
  console.log(`
Demo data created (tenant "default", site "${demo.site}", one API key). Try a decision:

${decide} -d '{"features":["paywall","newsletter_prompt"],"deviceId":"device-1"}'

A metered article: the descriptor a publisher's CMS signs with the site's content key. The demo
meter lets five different articles through a month, then the paywall denies (npm run svc --
demo-request sends one for any article id):

${decide} -d '${JSON.stringify({ features: ["paywall"], deviceId: "device-1", content: article })}'
`);
}

/** The demo site's content descriptor for an article, signed with its document's first key. */
function demoArticle(id: string): { payload: string; signature: string } {
  const document = JSON.parse(readFileSync(demoDocumentPath, "utf8")) as { contentKeys: { secret: string }[] };
  const payload = JSON.stringify({ id, section: "news", access: "metered" });
  return { payload, signature: signContentPayload(payload, document.contentKeys[0]?.secret ?? "") };
}

/**
 * With DATABASE_URL: the server store, waited for while unreachable (SVC_START_RETRY_MS). A
 * store that cannot be opened stops the process with one line naming DATABASE_URL (password
 * masked), not a driver's stack trace. Without it: undefined (createDeps opens the embedded one).
 */
async function openServerDatabase(config: Config, logger: Logger): Promise<Database | undefined> {
  const url = config.databaseUrl;
  if (url === undefined) return undefined;
  try {
    return await openDatabaseRetrying(url, {
      retryMs: config.startRetryMs,
      hangMs: config.readDeadlineMs,
      onWaiting: (masked) =>
        logger.warn(`waiting for Postgres at DATABASE_URL ${masked}`, { retryMs: config.startRetryMs }),
      onProgress: (message, fields) => logger.info(message, fields),
    });
  } catch (error) {
    console.error(openFailureMessage(url, error));
    process.exit(1);
  }
}

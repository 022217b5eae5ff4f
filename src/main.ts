import { createApp } from "./app";
import { type Config, ConfigError, loadConfig } from "./config";
import { createDeps, startDeps, stopDeps } from "./deps";
import { yieldBackgroundThreads } from "./runtime/background-threads";
import { seedDemo } from "./seed";

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

const deps = await createDeps(config);
await startDeps(deps);
const app = createApp(deps).listen({
  port: config.port,
  hostname: config.host,
  // A backstop only: the app answers 413 in the envelope at SVC_MAX_BODY_BYTES (declared or
  // chunked); Bun's own cap (a bare 413) sits above it for bodies that never finish.
  maxRequestBodySize: config.maxBodyBytes * 2 + 65_536,
});
const port = app.server?.port ?? config.port;
deps.logger.info("listening", { port, store: deps.database.kind, dataDir: config.dataDir });
const runtimeThreads = config.runtimeThreads === "idle" ? yieldBackgroundThreads(deps.logger) : undefined;

if (config.seedDemo) {
  const demo = await seedDemo(deps);
  if (demo) {
    // Printed once: the key value is not stored and cannot be shown again.
    console.log(`
Demo data created (tenant "default", site "${demo.site}", one API key). Try a decision:

curl -s http://127.0.0.1:${port}/v1/decide -H 'x-svc-site-id: ${demo.site}' -H 'Authorization: Bearer ${demo.key}' -H 'content-type: application/json' -d '{"features":["paywall","newsletter_prompt"],"deviceId":"device-1"}'
`);
  }
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  deps.logger.info("stopping", { signal });
  try {
    runtimeThreads?.stop();
    await app.stop();
    await stopDeps(deps);
    process.exit(0);
  } catch (error) {
    deps.logger.error("unclean stop", { error: String(error) });
    process.exit(1);
  }
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

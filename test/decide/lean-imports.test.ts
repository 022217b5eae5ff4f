/**
 * Keyed decide is to be served from a thread whose heap holds as little code as it can (each
 * young collection works per function the heap holds), so the modules it runs on load no web
 * framework, no ORM, no database driver and no logging library: their stores, plugins and
 * loggers are built elsewhere and handed in. Run in a process of its own, since this test process
 * shares its module registry with every other suite; what it lists is what that process loaded
 * (ES modules included), not what a bundler would follow.
 */
import { describe, expect, it } from "bun:test";
import { runBun } from "../helpers/process";

/** The keyed decide path's modules: its route, engine and service and what they are handed. */
const KEYED_DECIDE_MODULES = [
  "src/decide/routes.ts",
  "src/decide/engine.ts",
  "src/decide/service.ts",
  "src/keys/service.ts",
  "src/keys/guard.ts",
  "src/keys/usage.ts",
  "src/sites/registry.ts",
  "src/counters/meter-counters.ts",
  "src/counters/decision-counts.ts",
  "src/counters/rate-windows.ts",
  "src/counters/quota-leases.ts",
  "src/counters/flusher.ts",
  "src/users/facts-cache.ts",
  "src/streaming/facts-cache.ts",
  "src/gifts/ledger.ts",
  "src/newsletters/facts-cache.ts",
  "src/preview/tokens.ts",
  "src/impact/samples.ts",
  "src/http/h1/server.ts",
  "src/http/error-envelope.ts",
  "src/infra/hot-request.ts",
  // The request thread's own (src/decide-thread/thread.ts imports these and the above).
  "src/decide-thread/channel.ts",
  "src/decide-thread/forward.ts",
  "src/decide-thread/remote-meters.ts",
  "src/decide-thread/settings.ts",
];

/** What none of them may load: packages by their folder, and the repo's drizzle client and schema. */
const FORBIDDEN = [
  "/node_modules/elysia/",
  "/node_modules/drizzle-orm/",
  "/node_modules/@electric-sql/pglite/",
  "/node_modules/postgres/",
  "/node_modules/pino",
  "/node_modules/@pinojs/",
  "/db/client.ts",
  "/db/schema.ts",
];

const SCRIPT = `
for (const path of ${JSON.stringify(KEYED_DECIDE_MODULES)}) await import("./" + path);
console.log(JSON.stringify(Object.keys(require.cache)));
`;

describe("the keyed decide path's modules", () => {
  it("load no Elysia, drizzle, PGlite, postgres or pino, nor the drizzle client and schema", async () => {
    const { code, stdout, stderr } = await runBun(["-e", SCRIPT], { PATH: process.env.PATH ?? "" });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const loaded = (JSON.parse(stdout) as string[]).map((path) => path.replaceAll("\\", "/"));
    // The listing is of every module the process loaded, not only those it named: one the
    // service imports on its own is there.
    expect(loaded.some((path) => path.endsWith("/src/core/evaluate.ts"))).toBe(true);
    expect(loaded.filter((path) => FORBIDDEN.some((forbidden) => path.includes(forbidden)))).toEqual([]);
  });
});

import type { Database } from "../../db/client";
import { createApp, listen } from "../../src/app";
import { type Config, loadConfig } from "../../src/config";
import type { MeterStore } from "../../src/counters/meter-counters";
import { createDeps, type Deps, startDeps, stopDeps } from "../../src/deps";
import type { MailTransport } from "../../src/mail/outbox";
import type { MailBudgetRules } from "../../src/mail-budget/budgets";
import { manualClock, memoryLogger } from "./clock";
import { scratchDir } from "./scratch-dirs";

export const OPERATOR_TOKEN = "test-operator-token-0123456789abcdef";

export { manualClock, memoryLogger } from "./clock";

export function testConfig(overrides: Record<string, string> = {}): Config {
  const dataDir = scratchDir("svc-test-");
  return loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
    SVC_SECRET: "test-secret-test-secret-test-secret-0123",
    SVC_LOG_LEVEL: "silent",
    SVC_SEED_DEMO: "0",
    ...overrides,
  });
}

export interface Harness {
  deps: Deps;
  app: ReturnType<typeof createApp>;
  clock: ReturnType<typeof manualClock>;
  logger: ReturnType<typeof memoryLogger>;
  /** In-process request: `app.handle(new Request(...))`. */
  request(
    method: string,
    path: string,
    init?: { headers?: Record<string, string>; body?: unknown; rawBody?: string },
  ): Promise<Response>;
  admin(method: string, path: string, body?: unknown): Promise<Response>;
  stop(): Promise<void>;
}

/** Builds deps and the app over a given database, with a manual clock and a memory logger. */
export async function startHarness(
  database: Database,
  options: {
    config?: Record<string, string>;
    mailTransport?: MailTransport;
    /** Where `env:NAME` references in outside-service settings resolve. */
    serviceEnv?: Record<string, string | undefined>;
    /** The meters' store, when a test wraps the drizzle one. */
    meterStore?: MeterStore;
    /** The mail budgets' numbers (default MAIL_BUDGETS). */
    mailBudgets?: MailBudgetRules;
  } = {},
): Promise<Harness> {
  const clock = manualClock();
  const logger = memoryLogger();
  const deps = await createDeps(testConfig(options.config), {
    database,
    now: clock.now,
    logger,
    pollMs: 50,
    mailTransport: options.mailTransport,
    serviceEnv: options.serviceEnv ?? {},
    meterStore: options.meterStore,
    mailBudgets: options.mailBudgets,
  });
  await startDeps(deps);
  const app = createApp(deps);
  const request: Harness["request"] = (method, path, init = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    let body: string | undefined = init.rawBody;
    if (init.body !== undefined) body = JSON.stringify(init.body);
    if (body !== undefined) headers["content-type"] ??= "application/json";
    if (body !== undefined) headers["content-length"] ??= String(Buffer.byteLength(body));
    return app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
  };
  return {
    deps,
    app,
    clock,
    logger,
    request,
    admin: (method, path, body) =>
      request(method, path, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }, body }),
    stop: () => stopDeps(deps, { closeDatabase: false }),
  };
}

/** A harness's app listening on a free port (bound where its HOST says), reached on 127.0.0.1. */
export interface Served {
  port: number;
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Stops listening and closes the open connections. */
  stop(): Promise<void>;
}

/** Serves the harness's app on a free port over its configured transport, as `npm start` would. */
export function serveHarness(h: Pick<Harness, "app" | "deps">): Served {
  const server = listen(h.app, h.deps, 0).server;
  const port = server?.port;
  if (server === null || port === undefined) throw new Error("the app is not listening");
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    stop: async () => {
      await server.stop(true);
    },
  };
}

/** Creates the default tenant, a site deployed from `document`, and returns a key for it. */
export async function seedSite(
  h: Harness,
  site: string,
  document: unknown,
  key: { name?: string; permissions?: string[]; expiresInDays?: number } = {},
): Promise<{ key: string; keyId: string }> {
  const tenants = (await (await h.admin("GET", "/admin/tenants")).json()) as { tenants: { id: string }[] };
  if (!tenants.tenants.some((t) => t.id === "default")) {
    expectOk(await h.admin("POST", "/admin/tenants", { id: "default", default: true }));
  }
  expectOk(await h.admin("POST", "/admin/tenants/default/sites", { id: site }));
  expectOk(await h.admin("POST", `/admin/tenants/default/sites/${encodeURIComponent(site)}/deploy`, { document }));
  const issued = await h.admin("POST", `/admin/tenants/default/sites/${encodeURIComponent(site)}/keys`, {
    name: key.name ?? "test key",
    permissions: key.permissions,
    expiresInDays: key.expiresInDays,
  });
  expectOk(issued);
  const body = (await issued.json()) as { key: string; id: string };
  return { key: body.key, keyId: body.id };
}

function expectOk(response: Response): void {
  if (response.status >= 300) throw new Error(`setup call failed with ${response.status}`);
}

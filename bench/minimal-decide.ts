/**
 * A minimal hand-written keyed decide on a bare `Bun.serve`, measured beside svc in the pinned
 * bench (bench/pinned.ts): what a decide costs with none of svc's machinery (no Elysia, no store,
 * no rate windows, no request metrics). It does the work every keyed decide must: checks the API
 * key and site, reads the JSON body, verifies the signed content with the core's verifier, counts
 * a meter for the reader and answers five decisions. Run as its own process
 * (`bun bench/minimal-decide.ts`, keys in MINIMAL_KEYS_FILE, one a line); prints
 * `{"message":"listening","port":N,...}` with the number of functions it holds.
 *
 * `MINIMAL_IMPORT=src/app.ts,src/deps.ts` (paths in the checkout) first imports those modules and
 * never calls them: the same decide in a process that holds svc's code. `MINIMAL_BESIDE_SVC=<n>`
 * starts svc in the same process (bench/in-process.ts: embedded store, the bench site, 300 keys),
 * answers n keyed decide requests through it and leaves it idle, its timers running, while this
 * decide serves; with `MINIMAL_BESIDE_STOPPED=1` its timers and background work are stopped
 * (`stopDeps`, the database left open), so only what it holds stays (bench/tail-variants.ts
 * `REFERENCE_VARIANTS`; bench/HISTORY.md, "What holding svc's code costs the tail").
 * `MINIMAL_IN_WORKER=1` serves the decide from a Worker (bench/minimal-decide-worker.ts), a thread
 * with a heap of its own, whatever this thread holds or runs beside it; `executables` is then the
 * worker's, `mainExecutables` this thread's.
 */
import { heapStats } from "bun:jsc";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createContentVerifier } from "../src/core/verifier";
import { BENCH_SITE, CONTENT_KEYS } from "./site";

interface Body {
  features?: unknown;
  content?: { payload: string; signature: string };
  deviceId?: unknown;
  userId?: unknown;
}

const json = { "content-type": "application/json" };

export function startMinimalDecide(keys: ReadonlySet<string>, port = 0) {
  const verify = createContentVerifier(CONTENT_KEYS.map((k) => ({ id: k.id, secret: k.secret })));
  const meters = new Map<string, number>();
  const refuse = (status: number, code: string) =>
    new Response(JSON.stringify({ error: { code, message: code } }), { status, headers: json });
  return Bun.serve({
    hostname: "127.0.0.1",
    port,
    routes: {
      "/v1/decide": {
        async POST(request) {
          const key = request.headers.get("x-api-key");
          if (key === null || !keys.has(key)) return refuse(401, "unauthorized");
          if (request.headers.get("x-svc-site-id") !== BENCH_SITE) return refuse(403, "forbidden");
          const body = (await request.json()) as Body;
          if (!Array.isArray(body.features)) return refuse(422, "validation_failed");
          const now = Date.now();
          const content = verify(body.content, now);
          const subject = typeof body.userId === "string" ? `u:${body.userId}` : `d:${String(body.deviceId)}`;
          const seen = (meters.get(subject) ?? 0) + 1;
          meters.set(subject, seen);
          const decisions: Record<string, unknown> = {};
          for (const name of body.features) {
            if (typeof name !== "string") continue;
            const metered = content?.facts.access === "metered";
            decisions[name] = {
              outcome: metered && seen > 5 ? "block" : "allow",
              reason: metered ? "meter" : "default",
              meter: { count: seen, limit: 5 },
            };
          }
          return new Response(JSON.stringify({ decisions, unanswered: [], preview: false, exposures: [] }), {
            headers: json,
          });
        },
      },
    },
    fetch: () => refuse(404, "not_found"),
  });
}

if (import.meta.main) {
  const file = process.env.MINIMAL_KEYS_FILE;
  const keys = new Set(file ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
  // Read first: the svc started beside it sets PORT for its own listener.
  const port = Number(process.env.PORT ?? 0);
  // Loaded only: nothing is created, started or called.
  const holds = (process.env.MINIMAL_IMPORT ?? "").split(",").filter(Boolean);
  for (const module of holds) await import(join(import.meta.dir, "..", module));
  // svc started beside it and warmed, then left idle (`MINIMAL_BESIDE_SVC`).
  const beside = Number(process.env.MINIMAL_BESIDE_SVC ?? 0);
  if (!Number.isSafeInteger(beside) || beside < 0) {
    throw new Error(`MINIMAL_BESIDE_SVC must be a count of requests (got "${process.env.MINIMAL_BESIDE_SVC}")`);
  }
  let besideFolder: string | undefined;
  /** Whether the svc beside it is still started (its timers running), when there is one. */
  let besideStarted: boolean | undefined;
  if (beside > 0) {
    const { serveInProcess } = await import("./in-process");
    const svc = await serveInProcess(join(import.meta.dir, ".."));
    await svc.run(beside);
    besideFolder = process.env.SVC_DATA_DIR; // its store's fresh folder, removed at the end
    if (process.env.MINIMAL_BESIDE_STOPPED === "1") {
      // Its timers and background work stopped (the database left open): only what it holds stays.
      const { stopDeps } = await import("../src/deps.ts");
      await stopDeps(svc.deps, { closeDatabase: false });
    }
    besideStarted = svc.deps.lifecycle.started;
  }
  // The functions the process holds (JavaScriptCore's executables), after a full collection.
  Bun.gc(true);
  const mainExecutables = heapStats().objectTypeCounts.FunctionExecutable ?? 0;
  let serving: { port: number; executables: number; stop: () => void };
  if (process.env.MINIMAL_IN_WORKER === "1") {
    const worker = new Worker(new URL("./minimal-decide-worker.ts", import.meta.url).href);
    const ready = new Promise<{ port: number; executables: number }>((resolve, reject) => {
      worker.onmessage = (event) => resolve(event.data);
      // A worker that fails (its port taken, say) must stop this process, not leave it waiting.
      worker.onerror = (event) => reject(new Error(`the minimal decide's worker failed: ${event.message}`));
    });
    worker.postMessage({ keys: [...keys], port });
    serving = { ...(await ready), stop: () => worker.terminate() };
  } else {
    const server = startMinimalDecide(keys, port);
    Bun.gc(true);
    const executables = heapStats().objectTypeCounts.FunctionExecutable ?? 0;
    serving = { port: server.port ?? port, executables, stop: () => server.stop(true) };
  }
  const { port: listening, executables } = serving;
  const inWorker = process.env.MINIMAL_IN_WORKER === "1" ? { mainExecutables } : {};
  console.log(
    JSON.stringify({ message: "listening", port: listening, holds, executables, besideStarted, ...inWorker }),
  );
  const stop = () => {
    serving.stop();
    if (besideFolder !== undefined) rmSync(besideFolder, { recursive: true, force: true });
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

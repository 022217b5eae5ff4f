/**
 * svc served in this process for measurements below the kernel's noise (bench/decide-census.ts,
 * bench/flush-cost.ts): the server of the checkout at `root` on the embedded store in a fresh
 * folder, the bench site deployed and 300 keys issued through the admin API, and the h1
 * transport's socket handlers driven with sockets of our own (no kernel; what they are handed is
 * taken whole), 64 connections sending the pinned bench's keyed decide requests.
 * `env` is set before the server's modules load (e.g. `SVC_FLUSH_INTERVAL_MS`).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drive, takeHandlers } from "./h1-driver";
import { benchBodies } from "./keyed-load";
import { BENCH_SITE, buildBenchSite } from "./site";

const TOKEN = "in-process-operator-token-0123456789";

export async function serveInProcess(root: string, env: Record<string, string> = {}) {
  Object.assign(process.env, {
    SVC_DATA_DIR: mkdtempSync(join(tmpdir(), "svc-in-process-")),
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_SEED_DEMO: "0",
    SVC_LOG_LEVEL: "warn",
    PORT: "0",
    HOST: "127.0.0.1",
    ...env,
  });
  const { loadConfig } = await import(join(root, "src/config.ts"));
  const { createDeps, startDeps } = await import(join(root, "src/deps.ts"));
  const { createApp, listen } = await import(join(root, "src/app.ts"));
  const deps = await createDeps(loadConfig());
  await startDeps(deps);
  const app = createApp(deps);
  const admin = async (path: string, body: unknown) => {
    const response: Response = await app.handle(
      new Request(`http://127.0.0.1/admin${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  await admin("/tenants", { id: "default", default: true });
  await admin("/tenants/default/sites", { id: BENCH_SITE });
  await admin(`/tenants/default/sites/${BENCH_SITE}/deploy`, { document: buildBenchSite() });
  const keys: string[] = [];
  for (let i = 0; i < 300; i++) {
    const issued = (await admin(`/tenants/default/sites/${BENCH_SITE}/keys`, { name: `in-process-${i}` })) as {
      key: string;
    };
    keys.push(issued.key);
  }
  const requests = benchBodies().map((text, i) =>
    Buffer.from(
      `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nx-svc-site-id: ${BENCH_SITE}\r\nx-api-key: ${keys[i % keys.length]}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    ),
  );
  // The transport's socket handlers, taken as `listen` hands them to Bun.listen (which still listens).
  const driver = drive(
    takeHandlers(() => listen(app, deps), true),
    64,
  );
  let next = 0;
  /** Answers `count` keyed decide requests over the 64 connections. */
  const run = (count: number) => driver.run(count, () => requests[next++ % requests.length] as Uint8Array);
  return { deps, driver, run };
}

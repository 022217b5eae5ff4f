import { describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { OPERATOR_TOKEN } from "../helpers/harness";
import type { ServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { seedServerSite, twoServerProcesses } from "../helpers/server-processes";
import { openSse } from "../helpers/sse";
import { until } from "../helpers/wait";

const CAP = 4;
const HEARTBEAT_MS = 200;

/**
 * The interventions stream's per-key cap (SVC_SSE_STREAMS_PER_KEY) across two real server
 * processes on one Postgres server: however a key's opens are spread over both at once, exactly
 * the cap is open; a stream closed on one frees a slot on the other; a process gone (killed)
 * stops holding its slots once it has missed three heartbeats.
 */
describe.if(Boolean(process.env.DATABASE_URL))("the interventions stream's cap across two server processes", () => {
  const streams: Awaited<ReturnType<typeof openSse>>[] = [];
  const w = twoServerProcesses(
    (url) => ({
      DATABASE_URL: url,
      SVC_DATA_DIR: scratchDir("svc-sse-proc-"),
      SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
      SVC_SECRET: "sse-processes-secret-sse-processes-secret",
      SVC_SEED_DEMO: "0",
      SVC_SSE_STREAMS_PER_KEY: String(CAP),
      SVC_SSE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    }),
    (first) => seedServerSite(first, basicDocument(), "streams"),
    () => {
      for (const stream of streams) stream.close();
    },
  );

  const open = async (server: ServerProcess) => {
    const stream = await openSse(`${server.url}/v1/decide/interventions`, {
      "x-svc-site-id": "news",
      authorization: `Bearer ${w.key}`,
    });
    if (stream.response.ok) streams.push(stream);
    return stream;
  };
  const [a, b] = [() => w.servers[0] as ServerProcess, () => w.servers[1] as ServerProcess];

  it("opens exactly the cap of one key's streams spread over both at once", async () => {
    const opened = await Promise.all(Array.from({ length: CAP + 3 }, (_, i) => open(i % 2 === 0 ? a() : b())));
    const statuses = opened.map((s) => s.response.status);
    expect(statuses.filter((s) => s === 200).length).toBe(CAP);
    expect(statuses.filter((s) => s === 429).length).toBe(3);
    const refused = opened.find((s) => s.response.status === 429);
    expect(refused?.response.headers.get("retry-after")).toBe("30");
    expect((await open(a())).response.status).toBe(429);
    expect((await open(b())).response.status).toBe(429);
  }, 60_000);

  it("frees a slot for the other process when a stream closes", async () => {
    const onA = streams.filter((s) => s.response.url.startsWith(a().url));
    const closing = onA.length > 0 ? (onA[0] as (typeof streams)[number]) : (streams[0] as (typeof streams)[number]);
    streams.splice(streams.indexOf(closing), 1);
    closing.close();
    // The give-back reaches Postgres once the server sees the stream gone.
    let status = 429;
    await until(
      async () => {
        status = (await open(b())).response.status;
        return status !== 429;
      },
      10_000,
      50,
    );
    expect(status).toBe(200);
    expect((await open(a())).response.status).toBe(429);
  }, 60_000);

  it("stops counting a killed process' streams once it has missed three heartbeats", async () => {
    const heldByA = streams.filter((s) => s.response.url.startsWith(a().url)).length;
    expect(heldByA).toBeGreaterThan(0);
    await a().stop("SIGKILL");
    await Bun.sleep(3 * HEARTBEAT_MS + 500);
    for (let i = 0; i < heldByA; i++) expect((await open(b())).response.status).toBe(200);
    expect((await open(b())).response.status).toBe(429);
  }, 60_000);
});

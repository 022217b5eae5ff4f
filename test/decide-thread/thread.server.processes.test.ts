/**
 * The request thread on a Postgres server (SVC_DECIDE_THREAD=on, DATABASE_URL): a count meter's
 * calls below the allowance are admitted through the store by the thread, and /metrics, served by
 * the main thread, counts those admissions (the thread's store calls cross to the main thread,
 * whose store for them keeps the tallies).
 */
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { emptyServerDatabase } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { type ServerProcess, startServerProcess } from "../helpers/process";
import { within } from "../helpers/second-process";
import { seedServerSite } from "../helpers/server-processes";
import { DOCUMENT } from "./document";

describe.skipIf(!process.env.DATABASE_URL)("the request thread on a Postgres server", () => {
  let server: ServerProcess;
  let database: { url: string; drop(): Promise<void> };
  let key = "";

  const decide = (deviceId: string) =>
    fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ features: ["paywall"], deviceId }),
    });
  const sample = async (name: string) => {
    const text = await (
      await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
    ).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    return Number(line?.split(" ")[1] ?? Number.NaN);
  };

  beforeAll(async () => {
    database = await emptyServerDatabase();
    server = await startServerProcess({
      DATABASE_URL: database.url,
      SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
      SVC_SECRET: "decide-thread-server-test-secret-0123",
      SVC_DECIDE_THREAD: "on",
      SVC_SEED_DEMO: "0",
    });
    key = await seedServerSite(server, DOCUMENT, "thread");
    await within(10_000, async () => (await decide("warm-up")).status === 200);
  }, 60_000);

  afterAll(async () => {
    await server?.stop("SIGKILL");
    await database?.drop();
  });

  it("counts the thread's count-meter admissions in /metrics", async () => {
    const before = await sample("svc_meter_count_admissions_total");
    expect(before).toBeGreaterThanOrEqual(1); // the warm-up's call
    // Three calls below the allowance (3): each admitted through the store.
    for (let i = 0; i < 3; i++) expect((await decide("d-admitted")).status).toBe(200);
    expect(await sample("svc_meter_count_admissions_total")).toBe(before + 3);
    expect(await sample("svc_meter_count_admission_statements_total")).toBeGreaterThanOrEqual(1);
  });
});

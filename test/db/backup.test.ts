import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { lockDataFolder } from "../../db/data-folder-lock";
import { demoRequest } from "../../src/cli/commands/demo-request";
import { runCli, type ServerProcess, startServerProcess, tempDir } from "../helpers/process";

const SECRETS = {
  SVC_OPERATOR_TOKEN: "backup-test-operator-token-0123456789",
  SVC_SECRET: "backup-test-secret-backup-test-secret-0123",
  SVC_PUBLIC_URL: "http://127.0.0.1:3000",
  SVC_SEED_DEMO: "1",
};

/** The demo's paywall for an article, as a publisher's server asks it. */
async function paywall(server: ServerProcess, key: string, article: string, device = "device-1") {
  const out = await demoRequest(
    { env: { SVC_URL: server.url, SVC_KEY: key }, call: async () => ({}) },
    { article, device, access: "metered" },
  );
  return (out.json as { decisions: { paywall: unknown } }).decisions.paywall;
}

/** Waits until the output matches, or fails with the output. */
async function waitFor(server: ServerProcess, pattern: RegExp): Promise<RegExpMatchArray> {
  const match = await server.waitForOutput(pattern, 30_000);
  if (match) return match;
  throw new Error(`no ${pattern} in:\n${server.output()}`);
}

describe("backup of the running embedded store and restore into a fresh data folder (real processes)", () => {
  const first = tempDir("svc-backup-");
  const second = tempDir("svc-restore-");
  const file = join(tempDir("svc-backup-file-"), "store.tar.gz");
  let a: ServerProcess;
  let b: ServerProcess | undefined;
  let key: string;
  let session: string;
  const answers: Record<string, unknown> = {};

  beforeAll(async () => {
    a = await startServerProcess({ SVC_DATA_DIR: first, ...SECRETS });
    key = (await waitFor(a, /Bearer (svc_[0-9A-Za-z]+)/))[1]!;
    // Three articles of the five the demo meter lets through this month.
    for (const article of ["a-1", "a-2", "a-3"]) await paywall(a, key, article);
    // A signed-in reader: the mail (printed without SMTP) carries the link's token.
    const asked = await fetch(`${a.url}/v1/id/sign-in/magic-link`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "demo" },
      body: JSON.stringify({ email: "reader@example.com" }),
    });
    expect(asked.status).toBe(200);
    const token = (await waitFor(a, /token=([\w-]+)/))[1]!;
    const consumed = await fetch(`${a.url}/v1/id/magic-link/consume`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "demo" },
      body: JSON.stringify({ token }),
    });
    expect(consumed.status).toBe(200);
    session = consumed.headers.get("set-auth-token") ?? "";
    expect(session.length).toBeGreaterThan(20);
  }, 90_000);
  afterAll(async () => {
    await a?.stop("SIGKILL");
    await b?.stop("SIGKILL");
  });

  const getSession = async (server: ServerProcess) => {
    const res = await fetch(`${server.url}/v1/id/get-session`, {
      headers: { "x-svc-site-id": "demo", authorization: `Bearer ${session}` },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { user: { email: string; id: string } }).user;
  };

  it("writes a backup through the CLI while the server keeps answering decisions", async () => {
    // Decisions in flight while the dump is taken (an article already counted: the count stays 3).
    const during = Array.from({ length: 20 }, () => paywall(a, key, "a-2"));
    const backup = await runCli(["backup", file, "--json"], { SVC_URL: a.url, ...SECRETS });
    expect(backup.stderr).toBe("");
    expect(backup.code).toBe(0);
    expect(JSON.parse(backup.stdout).bytes).toBeGreaterThan(100_000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    for (const answer of await Promise.all(during)) expect(answer).toEqual(await paywall(a, key, "a-2"));
    answers.seen = await paywall(a, key, "a-2");
    answers.user = await getSession(a);
  }, 60_000);

  it("refuses to restore into a data folder that holds a store, or while its server runs", async () => {
    const busy = await runCli(["restore", file], { SVC_DATA_DIR: first, ...SECRETS });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("already holds a store");
    const fresh = tempDir("svc-restore-busy-");
    const held = lockDataFolder(fresh);
    try {
      const running = await runCli(["restore", file], { SVC_DATA_DIR: fresh, ...SECRETS });
      expect(running.code).toBe(1);
      expect(running.stderr).toContain(`in use by another server (pid ${process.pid}`);
      expect(existsSync(join(fresh, "pg"))).toBe(false);
    } finally {
      held.release();
    }
  });

  it("restores into a fresh data folder, and the server there answers the same decisions and sessions", async () => {
    expect(await a.stop("SIGTERM")).toBe(0);
    const restored = await runCli(["restore", file], { SVC_DATA_DIR: second, ...SECRETS });
    expect(restored.stderr).toBe("");
    expect(restored.code).toBe(0);
    expect(existsSync(join(second, "pg", "PG_VERSION"))).toBe(true);

    b = await startServerProcess({ SVC_DATA_DIR: second, ...SECRETS });
    expect(await paywall(b, key, "a-2")).toEqual(answers.seen);
    expect(await getSession(b)).toEqual(answers.user as { email: string; id: string });
    // The meter carried over: two more articles pass, the sixth is denied.
    for (const article of ["a-4", "a-5"]) expect(await paywall(b, key, article)).toMatchObject({ type: "allow" });
    expect(await paywall(b, key, "a-6")).toMatchObject({ type: "deny" });
    // No second demo was seeded on the restored store.
    expect(b.output()).not.toContain("Demo data created");
  }, 90_000);
});

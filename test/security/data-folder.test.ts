import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ServerProcess, startServerProcess, tempDir } from "../helpers/process";

/** Every path under a folder (itself included), with its mode bits. */
function walk(dir: string): { path: string; mode: number; isDir: boolean }[] {
  const out: { path: string; mode: number; isDir: boolean }[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    out.push({ path, mode: stat.mode & 0o777, isDir: stat.isDirectory() });
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(dir);
  return out;
}

describe("the embedded store's data folder", () => {
  let server: ServerProcess;
  let dataDir: string;
  let token: string;

  beforeAll(async () => {
    dataDir = join(tempDir("svc-files-"), "data");
    server = await startServerProcess({
      SVC_DATA_DIR: dataDir,
      SVC_SEED_DEMO: "1",
      SVC_PUBLIC_URL: "http://127.0.0.1:3000",
      SVC_RUNTIME_THREADS: "normal",
    });
    // The demo is seeded after the server listens.
    await server.waitForOutput(/Demo data created/, 30_000);
    // A sign-in request: its mail (printed on stdout with no SMTP configured) carries a live token.
    const asked = await fetch(`${server.url}/v1/id/sign-in/magic-link`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "demo" },
      body: JSON.stringify({ email: "reader@example.com" }),
    });
    if (asked.status !== 200)
      throw new Error(`sign-in answered ${asked.status}: ${await asked.text()}\n${server.output()}`);
    token = (await server.waitForOutput(/token=([\w-]+)/, 10_000))?.[1] ?? "";
    expect(token.length).toBeGreaterThan(20);
    expect(await server.stop("SIGTERM")).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  test("is private: folders 0700 and files 0600 (no group or other bits anywhere)", () => {
    const entries = walk(dataDir);
    expect(entries.length).toBeGreaterThan(100);
    const open = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.path} ${e.mode.toString(8)}`);
    expect(open).toEqual([]);
    expect(entries.filter((e) => e.isDir).every((e) => e.mode === 0o700)).toBe(true);
  });

  test("holds no live sign-in token in clear, in any file (tables, WAL, logs)", () => {
    const needle = Buffer.from(token, "utf8");
    const holding = walk(dataDir)
      .filter((e) => !e.isDir)
      .filter((e) => readFileSync(e.path).includes(needle))
      .map((e) => e.path);
    expect(holding).toEqual([]);
  });
});

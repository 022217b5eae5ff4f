import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DataFolderInUseError, LOCK_FILE, lockDataFolder } from "../../db/data-folder-lock";
import { runBun, runCli, type ServerProcess, startServerProcess, tempDir } from "../helpers/process";

/** The pid of a process that has exited (the OS does not hand it out again this soon). */
async function deadPid(): Promise<number> {
  const child = Bun.spawn([process.execPath, "-e", "0"]);
  await child.exited;
  return child.pid;
}

describe("the data folder's lock", () => {
  it("refuses a second holder while the first holds it, and is free again once released", () => {
    const folder = tempDir("svc-lock-");
    const first = lockDataFolder(folder);
    expect(() => lockDataFolder(folder)).toThrow(DataFolderInUseError);
    first.release();
    expect(existsSync(join(folder, LOCK_FILE))).toBe(false);
    lockDataFolder(folder).release();
  });

  it("takes over a lock whose process is gone (a crash)", async () => {
    const folder = tempDir("svc-lock-");
    const pid = await deadPid();
    writeFileSync(join(folder, LOCK_FILE), JSON.stringify({ pid, startedAt: "2026-01-01T00:00:00.000Z" }));
    const lock = lockDataFolder(folder);
    expect(JSON.parse(readFileSync(lock.file, "utf8")).pid).toBe(process.pid);
    lock.release();
  });

  it("takes over a lock whose pid now names another process (a container restarted as pid 1)", () => {
    const folder = tempDir("svc-lock-");
    const stale = { pid: process.pid, startedAt: "2026-01-01T00:00:00.000Z", start: "another-boot:1" };
    writeFileSync(join(folder, LOCK_FILE), JSON.stringify(stale));
    const lock = lockDataFolder(folder);
    expect(JSON.parse(readFileSync(lock.file, "utf8")).start).not.toBe("another-boot:1");
    lock.release();
  });

  it("takes over a lock file a crash left empty", () => {
    const folder = tempDir("svc-lock-");
    writeFileSync(join(folder, LOCK_FILE), "");
    lockDataFolder(folder).release();
  });
});

describe("one server per embedded data folder (real processes)", () => {
  const dataDir = tempDir("svc-lock-");
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({ SVC_DATA_DIR: dataDir, SVC_SEED_DEMO: "0" });
  }, 60_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  it("refuses a second server on the same folder with a message naming the first", async () => {
    const second = await runBun(["src/main.ts"], {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      SVC_DATA_DIR: dataDir,
      SVC_SEED_DEMO: "0",
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`in use by another server (pid ${server.pid}`);
    expect(second.stdout).not.toContain("listening");
  }, 60_000);

  it("lets the CLI work while the server runs", async () => {
    const listed = await runCli(["tenant", "list", "--json"], { SVC_URL: server.url, SVC_DATA_DIR: dataDir });
    expect(listed.code).toBe(0);
    expect(Array.isArray(JSON.parse(listed.stdout).tenants)).toBe(true);
  });

  it("removes the lock on a graceful stop, and a server after a crash starts on the stale lock", async () => {
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);

    server = await startServerProcess({ SVC_DATA_DIR: dataDir, SVC_SEED_DEMO: "0" });
    await server.stop("SIGKILL");
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(true);

    server = await startServerProcess({ SVC_DATA_DIR: dataDir, SVC_SEED_DEMO: "0" });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  }, 90_000);
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { runCli, type ServerProcess, startServerProcess, tempDir } from "../helpers/process";

/** `npm run svc -- audit` against a running server (embedded store). */
describe("svc audit", () => {
  let server: ServerProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    const dataDir = tempDir();
    server = await startServerProcess({ SVC_DATA_DIR: dataDir, SVC_SEED_DEMO: "0" });
    env = { SVC_URL: server.url, SVC_DATA_DIR: dataDir };
    expect((await runCli(["tenant", "create", "default", "--default"], env)).code).toBe(0);
    expect((await runCli(["site", "create", "news"], env)).code).toBe(0);
    expect((await runCli(["site", "create", "sport"], env)).code).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await server.stop("SIGTERM");
  }, 30_000);

  it("lists the operator's actions, newest first, as a table or as JSON", async () => {
    const table = await runCli(["audit"], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toBe("AT\tWHAT\tACTION\tTARGET");
    expect(lines[1]).toContain(
      "\tsite sport created in tenant default by the operator token\tPOST /tenants/:tenant/sites\ttenant=default",
    );
    expect(lines.length).toBe(4);
    const json = JSON.parse((await runCli(["audit", "--json", "--limit", "1"], env)).stdout);
    expect(json.entries.length).toBe(1);
  });

  it("filters by site (of the default tenant unless --tenant says)", async () => {
    await runCli(["site", "disable", "news"], env);
    const out = JSON.parse((await runCli(["audit", "--site", "news", "--json"], env)).stdout);
    expect(out.entries.map((e: { action: string }) => e.action)).toEqual(["POST /tenants/:tenant/sites/:site/disable"]);
    const none = JSON.parse((await runCli(["audit", "--site", "news", "--tenant", "other", "--json"], env)).stdout);
    expect(none.entries).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { join } from "node:path";
import { runCli, type ServerProcess, startServerProcess, tempDir } from "../helpers/process";

/**
 * The README's console path on a real server process, as `npm start` runs it (embedded store,
 * demo seeded, the default node:http transport, mail printed as log lines): add a console user
 * with the CLI, sign in through the pages and the printed link, issue a key, decide with it.
 */
describe("the console on a started server (README path)", () => {
  let server: ServerProcess;
  let dataDir: string;
  const jar = new Map<string, string>();

  beforeAll(async () => {
    dataDir = join(tempDir(), "data");
    server = await startServerProcess({ SVC_DATA_DIR: dataDir }, { startTimeoutMs: 90_000 });
    // The demo is seeded after "listening": the CLI below needs its tenant (under load, a race).
    await server.waitForOutput(/Demo data created/, 60_000);
    expect(server.output()).toContain("Demo data created");
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  /** A browser-like request on `localhost` (the origin the printed link is built on). */
  async function send(method: string, path: string, form?: Record<string, string>) {
    const origin = `http://localhost:${server.port}`;
    const headers: Record<string, string> = {};
    if (jar.size > 0) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (form) {
      body = new URLSearchParams(form).toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers.origin = origin;
    }
    const res = await fetch(`${origin}${path}`, { method, headers, body, redirect: "manual" });
    for (const cookie of res.headers.getSetCookie()) {
      const pair = cookie.split(";")[0] as string;
      const eq = pair.indexOf("=");
      if (/Max-Age=0/.test(cookie)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const text = await res.text();
    return { status: res.status, location: res.headers.get("location"), text };
  }
  const csrfOf = (page: string) => page.match(/name="_csrf" value="([^"]+)"/)?.[1] as string;

  it("goes from a started server to a key issued in the console, which decide accepts", async () => {
    const added = await runCli(["console-user", "add", "you@example.com", "--role", "owner"], {
      PATH: process.env.PATH ?? "",
      SVC_URL: server.url,
      SVC_DATA_DIR: dataDir,
    });
    expect(added.code).toBe(0);
    const signIn = await send("GET", "/console/sign-in");
    expect(signIn.status).toBe(200);
    const sent = await send("POST", "/console/sign-in", { _csrf: csrfOf(signIn.text), email: "you@example.com" });
    expect(sent.text).toContain("If that address is a console user");
    const link = (
      await server.waitForOutput(/http:\/\/localhost:\d+\/console\/auth\?token=[A-Za-z0-9_-]+/, 5_000)
    )?.[0];
    expect(link).toBeDefined();
    const url = new URL(link as string);
    const confirm = await send("GET", `${url.pathname}${url.search}`);
    const done = await send("POST", "/console/auth", {
      _csrf: csrfOf(confirm.text),
      token: url.searchParams.get("token") as string,
    });
    expect({ status: done.status, location: done.location }).toEqual({ status: 303, location: "/console" });
    expect(jar.has("svc.console_session")).toBe(true);
    const sites = await send("GET", "/console");
    expect(sites.text).toContain("you@example.com (owner, tenant default)");
    expect(sites.text).toContain("/console/sites/demo/keys");
    const keys = await send("GET", "/console/sites/demo/keys");
    const issued = await send("POST", "/console/sites/demo/keys", { _csrf: csrfOf(keys.text), name: "My server" });
    expect(issued.status).toBe(201);
    const key = issued.text.match(/<code id="new-key">([^<]+)<\/code>/)?.[1] as string;
    const decide = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "demo", authorization: `Bearer ${key}` },
      body: JSON.stringify({ features: ["paywall"], deviceId: "reader-1" }),
    });
    expect(decide.status).toBe(200);
    // The console's script is bundled by the server on first use.
    const script = await fetch(`${server.url}/console/assets/console.js`);
    expect(script.status).toBe(200);
    expect((await script.text()).length).toBeGreaterThan(10_000);
  }, 120_000);
});

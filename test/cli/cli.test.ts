import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { runCli, type ServerProcess, startServerProcess, tempDir } from "../helpers/process";
import { until } from "../helpers/wait";

describe("first run, the operator CLI and a graceful stop (embedded store, real processes)", () => {
  const dataDir = tempDir();
  let server: ServerProcess;
  let env: Record<string, string>;
  const issuedValues: string[] = [];

  beforeAll(async () => {
    server = await startServerProcess({ SVC_DATA_DIR: dataDir });
    env = { SVC_URL: server.url, SVC_DATA_DIR: dataDir };
    // The seed prints its curl line once the demo site is deployed.
    await server.waitForOutput(/curl -s/, 20_000);
  }, 60_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
  }, 60_000);

  it("seeds a labelled demo on an empty store and prints a curl line that gets a real decision", async () => {
    const line = server
      .output()
      .split("\n")
      .find((l) => l.startsWith("curl -s"));
    expect(line).toBeDefined();
    const key = line!.match(/Bearer (svc_[0-9A-Za-z]+)/)![1]!;
    const body = line!.match(/-d '(.*)'$/)![1]!;
    const res = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "demo", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(Object.keys(answer.decisions).length).toBeGreaterThan(0);
    expect(answer.preview).toBe(false);
  });

  it("writes the generated operator token with mode 0600", async () => {
    const stat = await Bun.file(join(dataDir, "operator-token")).stat();
    expect(stat.mode & 0o777).toBe(0o600);
  });

  it("creates a site, deploys, issues a key that works on its first request, lists and revokes it", async () => {
    const created = await runCli(["site", "create", "news", "--json"], env);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).site.id).toBe("news");

    const file = join(dataDir, "news.json");
    writeFileSync(file, JSON.stringify(basicDocument()));
    const deployed = await runCli(["deploy", "news", file, "--json"], env);
    expect(deployed.code).toBe(0);
    expect(JSON.parse(deployed.stdout).deployment).toMatchObject({ version: 1, stage: "live" });

    const issued = await runCli(
      ["keys", "issue", "news", "--name", "cms", "--permission", "streaming:write", "--json"],
      env,
    );
    expect(issued.code).toBe(0);
    const out = JSON.parse(issued.stdout);
    expect(out.key).toMatch(/^svc_/);
    issuedValues.push(out.key);
    const first = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", "x-api-key": out.key, "content-type": "application/json" },
      body: JSON.stringify({ features: ["teaser"], deviceId: "d-1" }),
    });
    expect(first.status).toBe(200);
    expect((await first.json()).decisions.teaser.outcome).toBe("on");

    const listed = await runCli(["keys", "list", "news", "--json"], env);
    expect(listed.code).toBe(0);
    const keys = JSON.parse(listed.stdout).keys;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id: out.id, name: "cms", permissions: ["streaming:write"], status: "active" });

    const revoked = await runCli(["keys", "revoke", "news", out.id, "--json"], env);
    expect(revoked.code).toBe(0);
    const after = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", "x-api-key": out.key, "content-type": "application/json" },
      body: JSON.stringify({ features: [] }),
    });
    expect(after.status).toBe(401);
  });

  it("lists content keys by fingerprint and rotates one, printing a made secret once", async () => {
    const listed = await runCli(["content-keys", "list", "news"], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\tFINGERPRINT/);
    expect(listed.stdout).toMatch(/k1\tsha256:[0-9a-f]{16}\t/);
    expect(listed.stdout).not.toContain("content-secret-one");
    const made = await runCli(["content-keys", "rotate", "news", "k1"], env);
    expect(made.code).toBe(0);
    const secret = made.stdout.split("\n")[0] as string;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(made.stdout).toContain("shown once");
    const file = join(dataDir, "content-secret.txt");
    writeFileSync(file, "a-secret-the-cms-already-has\n");
    const given = await runCli(["content-keys", "rotate", "news", "k1", "--secret-file", file, "--json"], env);
    expect(given.code).toBe(0);
    expect(JSON.parse(given.stdout).secret).toBeUndefined();
    expect(given.stdout).not.toContain("a-secret-the-cms-already-has");
    expect((await runCli(["content-keys", "rotate", "news", "nope"], env)).code).toBe(1);
  });

  it("deploys the documented example, creates a user, grants and previews through the CLI", async () => {
    expect((await runCli(["site", "create", "example", "--json"], env)).code).toBe(0);
    const deployed = await runCli(["deploy", "example", "docs/examples/demo-site.json", "--json"], env);
    expect(deployed.code).toBe(0);
    const staged = await runCli(["deploy", "example", "docs/examples/demo-site.json", "--preview", "--json"], env);
    expect(JSON.parse(staged.stdout).deployment.stage).toBe("preview");
    const key = JSON.parse((await runCli(["keys", "issue", "example", "--name", "ex", "--json"], env)).stdout).key;
    issuedValues.push(key);
    const user = JSON.parse((await runCli(["users", "create", "reader@example.com", "--json"], env)).stdout).user;
    expect(user.id).toMatch(/^[0-9a-f-]{36}$/);
    const granted = await runCli(["grants", "add", user.id, "premium", "--json"], env);
    expect(granted.code).toBe(0);
    const listed = JSON.parse((await runCli(["grants", "list", user.id, "--json"], env)).stdout);
    expect(listed.grants).toEqual([{ grant: "premium", expiresAt: null }]);
    const token = JSON.parse((await runCli(["preview-token", "example", "--json"], env)).stdout).token;
    issuedValues.push(token);
    const res = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: {
        "x-svc-site-id": "example",
        "x-api-key": key,
        "x-svc-preview": token,
        "content-type": "application/json",
      },
      body: JSON.stringify({ features: ["paywall"], userId: user.id }),
    });
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(answer.preview).toBe(true);
    expect(answer.decisions.paywall).toMatchObject({ outcome: "subscriber", type: "allow" });
    const revoked = await runCli(["grants", "revoke", user.id, "premium", "--json"], env);
    expect(revoked.code).toBe(0);
  });

  it("reports gift links per gifter and article and revokes one through the CLI (demo document)", async () => {
    expect((await runCli(["site", "create", "gifting", "--json"], env)).code).toBe(0);
    expect((await runCli(["deploy", "gifting", "docs/examples/demo-site.json", "--json"], env)).code).toBe(0);
    const key = JSON.parse((await runCli(["keys", "issue", "gifting", "--name", "g", "--json"], env)).stdout).key;
    issuedValues.push(key);
    const gifter = JSON.parse((await runCli(["users", "create", "gifter@example.com", "--json"], env)).stdout).user;
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "x-svc-site-id": "gifting", "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const minted = await post("/v1/gift-links", { userId: gifter.id, contentId: "story-9" });
    expect(minted.status).toBe(201);
    const gift = await minted.json();
    expect(gift.remaining).toBe(4);
    const read = () =>
      post("/v1/decide", {
        features: ["paywall"],
        deviceId: "friend-1",
        content: signedContent({ id: "story-9" }, "demo-content-key-change-me"),
        giftLink: gift.token,
      }).then((r) => r.json());
    expect((await read()).decisions.paywall.outcome).toBe("gifted");
    const report = await runCli(["gifts", "report", "gifting", "--json"], env);
    expect(report.code).toBe(0);
    expect(JSON.parse(report.stdout)).toEqual({
      gifters: [{ gifter: gifter.id, mints: 1, redemptions: 1 }],
      articles: [{ contentId: "story-9", mints: 1, redemptions: 1 }],
    });
    const text = await runCli(["gifts", "report", "gifting"], env);
    expect(text.stdout).toContain(`${gifter.id}\t1\t1`);
    const revoked = await runCli(["gifts", "revoke", "gifting", gift.giftId], env);
    expect(revoked.code).toBe(0);
    expect((await read()).decisions.paywall.outcome).not.toBe("gifted");
  });

  it("sets a tenant's public URL at creation and later, and mailed links follow it (loopback when none)", async () => {
    const created = await runCli(
      ["tenant", "create", "acme", "--host", "news.acme.example", "--public-url", "https://id.acme.example/", "--json"],
      env,
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).tenant).toMatchObject({ id: "acme", publicUrl: "https://id.acme.example" });
    const bad = await runCli(["tenant", "public-url", "acme", "https://id.acme.example/path"], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("origin without a path");

    /** Asks the demo site for a link from 127.0.0.1 and returns the link the dev mail log printed. */
    const mailedLink = async (email: string) => {
      const res = await fetch(`${server.url}/svc/v1/id/sign-in/magic-link`, {
        method: "POST",
        headers: { "x-svc-site-id": "demo", "content-type": "application/json" },
        body: JSON.stringify({ email }),
      });
      expect(res.status).toBe(200);
      const pattern = /https?:\/\/[^\s"]+\/svc\/v1\/id\/magic-link\?token=[A-Za-z0-9_-]+&site=demo/g;
      const lastLink = () => {
        // Each development mail is one JSON log line with its recipient and text.
        const mails = server
          .output()
          .split("\n")
          .flatMap((line) => {
            try {
              return [JSON.parse(line) as { to?: string; text?: string }];
            } catch {
              return []; // not JSON, or a line still being written
            }
          })
          .filter((line) => line.to === email);
        return mails.at(-1)?.text?.match(pattern)?.at(-1);
      };
      if (await until(() => lastLink() !== undefined, 10_000, 50)) return new URL(lastLink()!);
      throw new Error(`no link mailed to ${email}`);
    };
    // The demo tenant answers every host and has no host names: a loopback origin is trusted.
    expect((await mailedLink("loop@example.com")).origin).toBe(server.url);
    const set = await runCli(["tenant", "public-url", "default", "https://id.demo.example", "--json"], env);
    expect(set.code).toBe(0);
    expect((await mailedLink("public@example.com")).origin).toBe("https://id.demo.example");
    const listed = JSON.parse((await runCli(["tenant", "list", "--json"], env)).stdout).tenants;
    expect(listed.find((t: { id: string }) => t.id === "default").publicUrl).toBe("https://id.demo.example");
    expect((await runCli(["tenant", "public-url", "default", "--clear", "--json"], env)).code).toBe(0);
    expect((await mailedLink("cleared@example.com")).origin).toBe(server.url);
  });

  it("prints the store's size and each table's rows through db stats", async () => {
    const json = await runCli(["db", "stats", "--json"], env);
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout) as { databaseBytes: number; tables: { table: string }[] };
    expect(out.databaseBytes).toBeGreaterThan(0);
    expect(out.tables.map((t) => t.table)).toContain("sessions");
    const text = await runCli(["db", "stats"], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^database\t\d+\.\d\d MB/);
    expect(text.stdout).toContain("\nsite_documents\t");
  });

  it("prints the insight figures through stats: three metered reads show as three more decisions", async () => {
    const metered = async () => {
      const out = await runCli(["stats", "demo", "--range", "24h", "--json"], env);
      expect(out.code).toBe(0);
      const json = JSON.parse(out.stdout) as {
        decisions: { series: { feature: string; outcome: string; total: number }[] };
        meters: { meters: { meter: string }[] };
      };
      expect(json.meters.meters.map((m) => m.meter)).toContain("articles");
      return json.decisions.series.find((x) => x.feature === "paywall" && x.outcome === "metered")?.total ?? 0;
    };
    const before = await metered();
    // Through the browser route (no key: the demo key's request count is checked below).
    for (const id of ["cli-1", "cli-2", "cli-3"]) {
      const res = await fetch(`${server.url}/svc/v1/decide`, {
        method: "POST",
        headers: { "x-svc-site-id": "demo", origin: "http://localhost:3000", "content-type": "application/json" },
        body: JSON.stringify({
          features: ["paywall"],
          deviceId: "cli-stats",
          content: signedContent({ id, section: "news", access: "metered" }, "demo-content-key-change-me"),
        }),
      });
      expect(res.status).toBe(200);
    }
    expect(await metered()).toBe(before + 3);
    const text = await runCli(["stats", "demo"], env);
    expect(text.stdout).toContain("FEATURE\tOUTCOME\tVARIANT\tVERDICT\tCOUNT");
    expect(text.stdout).toContain("Experiment paywall_offer (control annual; two-proportion z-test");
    const bad = await runCli(["stats", "demo", "--range", "2y"], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--range must be one of 1h, 24h, 7d, 30d");
  });

  it("prints the site-document JSON Schema without a server", async () => {
    const res = await runCli(["schema", "--json"], { SVC_URL: "http://127.0.0.1:9" });
    expect(res.code).toBe(0);
    const schema = JSON.parse(res.stdout);
    expect(schema.$id).toBe("urn:svc:schema:site-document:1");
    expect(schema.properties.features).toBeDefined();
  });

  it("refuses an invalid document with the JSON path on stderr and a non-zero exit, leaving live untouched", async () => {
    const file = join(dataDir, "bad.json");
    const bad = basicDocument();
    (bad.features.paywall as { default: string }).default = "no_such_outcome";
    writeFileSync(file, JSON.stringify(bad));
    const res = await runCli(["deploy", "news", file], env);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("/features/paywall/default");
    const sites = JSON.parse((await runCli(["site", "list", "--json"], env)).stdout).sites;
    expect(sites.find((s: { id: string }) => s.id === "news").liveVersion).toBe(1);
  });

  it("prints errors to stderr with a non-zero exit for a bad command or an unreachable server", async () => {
    const unknown = await runCli(["frobnicate", "--json"], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout).toBe("");
    expect(JSON.parse(unknown.stderr).error).toContain("unknown command");
    const down = await runCli(["tenant", "list"], { ...env, SVC_URL: "http://127.0.0.1:9" });
    expect(down.code).not.toBe(0);
    expect(down.stderr).toContain("cannot reach the server");
  });

  it("stops on SIGTERM with exit 0 after flushing, and a restart reads the flushed counts without seeding again", async () => {
    const demoKey = server.output().match(/Bearer (svc_[0-9A-Za-z]+)/)![1]!;
    for (let i = 0; i < 3; i++) {
      await fetch(`${server.url}/v1/decide`, {
        method: "POST",
        headers: { "x-svc-site-id": "demo", "x-api-key": demoKey, "content-type": "application/json" },
        body: JSON.stringify({ features: [] }),
      });
    }
    const output = server.output();
    expect(await server.stop("SIGTERM")).toBe(0);
    // Secrets never reach the logs: the issued key value and the operator token are absent.
    const token = (await Bun.file(join(dataDir, "operator-token")).text()).trim();
    for (const secret of [...issuedValues, token]) expect(output).not.toContain(secret);

    server = await startServerProcess({ SVC_DATA_DIR: dataDir });
    env.SVC_URL = server.url;
    const keys = JSON.parse((await runCli(["keys", "list", "demo", "--json"], env)).stdout).keys;
    // 1 request from the first test, 3 from this one.
    expect(keys[0].requests).toBe(4);
    // No second seed: a clean stop (its handler is set once the seed step is done) ends the output.
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(server.output()).not.toContain("curl -s");
  });
});

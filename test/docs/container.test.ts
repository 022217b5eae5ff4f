import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startScriptEnv } from "../../bench/server";
import { tempDir } from "../helpers/process";
import { until } from "../helpers/wait";

const root = join(import.meta.dir, "..", "..");
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");

/** The JSON (exec form) argument list of the runtime stage's instruction `name`. */
function execForm(name: "CMD" | "HEALTHCHECK"): string[] {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const joined = runtime.replace(/\\\n\s*/g, " ");
  const line = joined.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in the Dockerfile's last stage`);
  const json = line.slice(line.indexOf("CMD [") + 4);
  return JSON.parse(json) as string[];
}

/** The runtime stage's ENV, as the container would see it. */
function imageEnv(): Record<string, string> {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const env: Record<string, string> = {};
  for (const line of runtime.split("\n").filter((l) => l.startsWith("ENV "))) {
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const [name, value] = pair.split("=");
      env[name as string] = value as string;
    }
  }
  return env;
}

/** `bun` in the image is /usr/local/bin/bun; here it is this test's own Bun. */
const asHere = (args: string[]) => args.map((a, i) => (i === 0 && a === "bun" ? process.execPath : a));

describe("the container recipe, outside a container", () => {
  const env = imageEnv();
  let server: ReturnType<typeof Bun.spawn>;
  let output = "";
  let port = 0;

  beforeAll(async () => {
    expect(env).toMatchObject({ SVC_DATA_DIR: "/data", HOST: "0.0.0.0", PORT: "3000" });
    expect(dockerfile).toMatch(/^USER svc$/m);
    expect(dockerfile).toMatch(/^VOLUME \/data$/m);
    // The image's CMD with its environment, but a scratch data folder and a free port.
    server = Bun.spawn(asHere(execForm("CMD")), {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", ...env, SVC_DATA_DIR: tempDir(), PORT: "0", HOST: "127.0.0.1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    };
    void pump(server.stdout as ReadableStream<Uint8Array>);
    void pump(server.stderr as ReadableStream<Uint8Array>);
    const listening = () => {
      port = Number(output.match(/"message":"listening","port":(\d+)/)?.[1] ?? 0);
      if (server.exitCode !== null) throw new Error(`the image's CMD exited:\n${output}`);
      return port > 0;
    };
    await until(listening, 60_000, 50);
    expect(port).toBeGreaterThan(0);
  }, 90_000);

  afterAll(async () => {
    server?.kill("SIGTERM");
    await server?.exited;
  });

  const healthcheck = async (atPort: number) => {
    const child = Bun.spawn(asHere(execForm("HEALTHCHECK")), {
      env: { PATH: process.env.PATH ?? "", PORT: String(atPort) },
      stdout: "ignore",
      stderr: "ignore",
    });
    return child.exited;
  };

  it("starts the server with the image's CMD, and the HEALTHCHECK finds it ready", async () => {
    expect(await healthcheck(port)).toBe(0);
    expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(200);
  }, 30_000);

  it("runs the server with the runtime settings npm start gives it (the allocator's purge delay)", () => {
    const started = startScriptEnv(root);
    expect(started).toEqual({ MIMALLOC_PURGE_DELAY: "10000" });
    expect(env).toMatchObject(started);
    expect(execForm("CMD")).toEqual(["bun", "--smol", "src/main.ts"]);
  });

  it("fails the HEALTHCHECK when nothing answers", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const unused = closed.port;
    closed.stop(true);
    expect(await healthcheck(unused)).toBe(1);
  }, 30_000);
});

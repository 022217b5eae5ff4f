import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type ServerProcess, startServerProcess, tempDir } from "../helpers/process";
import { until } from "../helpers/wait";

const root = join(import.meta.dir, "..", "..");

/** The address the docs' commands use; the test's server listens on a free port instead. */
const DOCS_ORIGIN = "http://127.0.0.1:3000";
/** Where the docs ask the reader to paste the token of the link the server printed. */
const PASTED_TOKEN = "PASTE_THE_TOKEN";

interface Block {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/** Markdown files: the README, then docs/ (sorted), so a block may rely on an earlier one. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => join(root, "docs", name));
  return [join(root, "README.md"), ...docs];
}

/** Every fenced block whose info string is `sh runnable`, in file order. */
export function runnableBlocks(files = markdownFiles()): Block[] {
  const blocks: Block[] = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^```sh runnable\n([\s\S]*?)^```$/gm)) {
      blocks.push({
        file: relative(root, file),
        line: text.slice(0, match.index).split("\n").length,
        text: match[1] as string,
      });
    }
  }
  return blocks;
}

/** The token of the last sign-in link the server printed (the development mail log line). */
function printedToken(output: string): string | undefined {
  const tokens = [...output.matchAll(/magic-link\?token=([A-Za-z0-9_-]+)/g)].map((m) => m[1]);
  return tokens.at(-1);
}

describe("the runnable commands of the README and docs/", () => {
  let server: ServerProcess;
  let dataDir: string;
  const blocks = runnableBlocks();

  beforeAll(async () => {
    dataDir = join(tempDir(), "data");
    // As the quick start does: the embedded default, which seeds the demo on its first start.
    server = await startServerProcess({ SVC_DATA_DIR: dataDir }, { startTimeoutMs: 90_000 });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("finds the README's runnable blocks: metering, a key, a magic-link sign-in and the CLI", () => {
    const readme = blocks.filter((b) => b.file === "README.md").map((b) => b.text);
    expect(readme.some((t) => t.includes("npm run svc -- demo-request"))).toBe(true);
    expect(readme.some((t) => t.includes("npm run svc -- keys issue"))).toBe(true);
    expect(readme.some((t) => t.includes("/v1/id/magic-link/consume"))).toBe(true);
    expect(blocks.some((b) => b.file === "docs/operations.md")).toBe(true);
    // The CLI is run through npm everywhere: never a bare `bun` a new user does not have, nor
    // `npx svc`, which outside the checkout fetches an unrelated registry package named svc.
    for (const file of markdownFiles()) {
      const text = readFileSync(file, "utf8");
      expect({ file: relative(root, file), npx: text.match(/npx svc\b.*$/m)?.[0] }).toEqual({
        file: relative(root, file),
        npx: undefined,
      });
      expect({ file: relative(root, file), bare: text.match(/^\s*bun (run|src|test)\b.*$/m)?.[0] }).toEqual({
        file: relative(root, file),
        bare: undefined,
      });
      expect({
        file: relative(root, file),
        outside: text.match(/\]\(\.\.\/\.\.\/shared[^)]*\)|\.\.\/shared\//)?.[0],
      }).toEqual({
        file: relative(root, file),
        outside: undefined,
      });
    }
  });

  it("runs every runnable block against a started server without a failed command", async () => {
    const outputs: string[] = [];
    for (const block of blocks) {
      let script = block.text.replaceAll(DOCS_ORIGIN, server.url);
      if (script.includes(PASTED_TOKEN)) {
        // The reader copies the token from the mail the server printed; so does the test.
        await until(() => printedToken(server.output()) !== undefined, 5_000, 50);
        const token = printedToken(server.output());
        expect(token).toBeDefined();
        script = script.replaceAll(PASTED_TOKEN, token as string);
      }
      const child = Bun.spawn(["bash", "-e", "-o", "pipefail", "-c", script], {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? dataDir,
          SVC_URL: server.url,
          SVC_DATA_DIR: dataDir,
        },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      const where = `${block.file}:${block.line}`;
      expect({ where, code, stderr: code === 0 ? "" : stderr }).toEqual({ where, code: 0, stderr: "" });
      // curl -s exits 0 on any status: an error envelope in the output is a failed command too.
      expect({ where, error: stdout.match(/"error":\{"code":"[a-z_]+"/)?.[0] }).toEqual({ where, error: undefined });
      outputs.push(stdout);
    }
    const all = outputs.join("\n");
    // The metering walk-through: five metered articles, then the wall.
    expect(all).toMatch(/article a-5: paywall metered \(allow\); articles meter: 4 of 5/);
    expect(all).toMatch(/article a-6: paywall wall_[a-z]+ \(deny\); articles meter: 5 of 5/);
    expect(all).toContain('"success":true');
    expect(all).toMatch(/"user":\{[^}]*"email":"reader@example.com"/);
    expect(all).toMatch(/^svc_[a-z0-9]+/m);
  }, 240_000);
});

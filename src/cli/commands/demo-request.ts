import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { signContentPayload } from "../../core/verifier";
import { CliError, type Commands } from "../context";

/** The demo seeded on a first start (src/seed.ts): its site and document. */
const DEMO_SITE = "demo";
const demoDocumentPath = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "docs",
  "examples",
  "demo-site.json",
);

/** What `svc demo-request` needs from the CLI: its environment and the operator API. */
export interface DemoRequestIo {
  readonly env: Record<string, string | undefined>;
  /** An operator-API call (the CLI's own). */
  readonly call: (method: string, path: string, body?: unknown) => Promise<unknown>;
}

export interface DemoRequestOptions {
  readonly article: string;
  readonly device: string;
  readonly access: "metered" | "free";
}

interface Answer {
  decisions?: Record<
    string,
    { outcome?: string; type?: string; meters?: Record<string, { allowance: number; count: number }> }
  >;
}

/**
 * The demo site's key for `svc demo-request`: SVC_KEY when set; otherwise one issued once through
 * the operator API and kept in `$SVC_DATA_DIR/demo-key` (mode 0600) for the next run.
 */
async function demoKey(io: DemoRequestIo): Promise<string> {
  if (io.env.SVC_KEY) return io.env.SVC_KEY;
  const file = join(resolve(io.env.SVC_DATA_DIR || "./data"), "demo-key");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const issued = (await io.call("POST", `/admin/tenants/default/sites/${DEMO_SITE}/keys`, {
    name: "demo-request (CLI)",
  })) as { key: string };
  writeFileSync(file, `${issued.key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return issued.key;
}

/**
 * One keyed decision on the demo site for an article, as a publisher's server would ask it: the
 * article's content descriptor signed with the demo document's first content key. Returns the
 * answer and a one-line summary (the paywall's outcome and the articles meter).
 */
export async function demoRequest(
  io: DemoRequestIo,
  options: DemoRequestOptions,
): Promise<{ json: unknown; text: string }> {
  const document = JSON.parse(readFileSync(demoDocumentPath, "utf8")) as { contentKeys: { secret: string }[] };
  const secret = document.contentKeys[0]?.secret ?? "";
  const payload = JSON.stringify({ id: options.article, section: "news", access: options.access });
  const body = {
    features: ["paywall"],
    deviceId: options.device,
    content: { payload, signature: signContentPayload(payload, secret) },
  };
  const key = await demoKey(io);
  const base = (io.env.SVC_URL || `http://127.0.0.1:${io.env.PORT || 3000}`).replace(/\/$/, "");
  const response = await fetch(`${base}/v1/decide`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "x-svc-site-id": DEMO_SITE, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Answer;
  if (!response.ok) throw new Error(`decide answered ${response.status}: ${JSON.stringify(answer)}`);
  const paywall = answer.decisions?.paywall;
  const meter = paywall?.meters?.articles;
  const metered = meter ? `; articles meter: ${meter.count} of ${meter.allowance} read before this one` : "";
  return {
    json: answer,
    text: `article ${options.article}: paywall ${paywall?.outcome} (${paywall?.type ?? "no type"})${metered}`,
  };
}

/** `svc demo-request`: its failures (a decide that answered an error) are reported like any other. */
export const demoRequestCommands: Commands = {
  "demo-request": async ({ values, env, call }) => {
    try {
      return await demoRequest(
        { env, call },
        {
          article: values.article ?? "a-1001",
          device: values.device ?? "device-1",
          access: values.free ? "free" : "metered",
        },
      );
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError((error as Error).message);
    }
  },
};

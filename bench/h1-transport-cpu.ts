/**
 * What the h1 transport's own JavaScript costs per request, without the kernel: `npx bun
 * bench/h1-transport-cpu.ts [root] [requests]` drives `serveOverH1` (of the checkout at `root`,
 * this one by default) through `Bun.listen`'s socket handlers with sockets of our own that take
 * every write, 64 connections, a keyed decide request as the bench sends it (head and a 486-byte
 * signed body), answered by a hot route that reads its fields and body and returns a decision
 * built by concatenation as answer-json.ts builds it (a rope, flattened when encoded). Prints CPU µs per request (process.cpuUsage, after a warm-up). Alternate two roots
 * to compare commits: with no socket, no network and no store, the figure moves by a few percent
 * between runs where the pinned bench moves by 15 (bench/HISTORY.md, "Where keyed decide's CPU goes").
 */
import { join } from "node:path";
import { drive, takeHandlers } from "./h1-driver";

const root = process.argv[2] ?? join(import.meta.dir, "..");
const total = Number(process.argv[3] ?? 300_000);
const { serveOverH1 } = await import(join(root, "src/http/h1/server.ts"));
const { withHotPath } = await import(join(root, "src/infra/hot-request.ts"));

const body =
  '{"features":["paywall","recirculation","slot_technology","slot_food","app_banner"],"content":{"payload":"{\\"id\\":\\"a-100011\\",\\"section\\":\\"technology\\",\\"access\\":\\"metered\\",\\"tags\\":[\\"technology\\"],\\"wordCount\\":1309,\\"publishedAt\\":\\"2026-10-11T14:10:02.580Z\\",\\"exp\\":1796024946}","signature":"HeogCHeTJwJ1LwfzDTBKfNFlvp9bDRUDGoANrvKA15w"},"context":{"section":"technology","platform":"ios","country":"FR","scrollDepth":0.55,"visitsThisWeek":6,"layout":"amp"},"deviceId":"dev-ai"}';
const answer =
  '{"decisions":{"paywall":{"outcome":"on","reason":"meter"},"recirculation":{"outcome":"off"},"slot_technology":{"outcome":"on","value":"a"},"slot_food":{"outcome":"off"},"app_banner":{"outcome":"on"}},"unanswered":[],"preview":false,"exposures":[]}';
const request = Buffer.from(
  "POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nx-svc-site-id: bench\r\nx-api-key: svc_0123456789abcdef0123456789abcdef\r\n" +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
);

const route = withHotPath(
  async () => new Response(answer),
  async (req: { headers: { get(name: string): string | null }; json(): Promise<unknown> }) => {
    if (req.headers.get("x-api-key") === null || req.headers.get("x-svc-site-id") === null) throw new Error("fields");
    const parsed = (await req.json()) as { features: string[] };
    if (parsed.features.length !== 5) throw new Error("body");
    // Built piece by piece, as answerJson builds it (a string of many parts until it is encoded).
    let out = '{"decisions":{';
    for (let i = 0; i < parsed.features.length; i++) {
      if (i > 0) out += ",";
      out += `"${parsed.features[i]}":${i % 2 === 0 ? '{"outcome":"on","reason":"meter"}' : '{"outcome":"off"}'}`;
    }
    return `${out}},"unanswered":[],"preview":false,"exposures":[]}`;
  },
);
const handlers = takeHandlers(() => {
  const app = {
    config: { serve: { routes: { "/v1/decide": { POST: route } } } },
    server: undefined,
    fetch: () => new Response(""),
  };
  serveOverH1(app, {
    port: 0,
    hostname: "127.0.0.1",
    maxRequestBodySize: 1 << 20,
    onError: (e: Error) => console.error(e),
  });
}, false);
const driver = drive(handlers, 64);
await driver.run(50_000, () => request);
const before = process.cpuUsage();
const start = driver.counts.answered;
await driver.run(total, () => request);
const used = process.cpuUsage(before);
console.log(((used.user + used.system) / (driver.counts.answered - start)).toFixed(3));
process.exit(0);

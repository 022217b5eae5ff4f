/**
 * The ceiling's twin over our own HTTP/1.1 transport: `serveOverH1` (src/http/h1) answering every
 * request with one fixed JSON body, as bench/ceiling-server.ts does over `Bun.serve`, so the
 * pinned bench shows what the transport itself costs beside Bun's. Run as its own process
 * (`bun bench/bare-h1-server.ts`); prints `{"message":"listening","port":N}`.
 */
import { readFileSync } from "node:fs";
import { serveOverH1 } from "../src/http/h1/server";
import type { NodeServerHandle } from "../src/http/node-server";

const file = process.env.CEILING_BODY_FILE;
const body = file ? readFileSync(file, "utf8") : '{"decisions":{},"unanswered":[],"preview":false,"exposures":[]}';

if (import.meta.main) {
  const app = {
    config: {},
    server: undefined as unknown,
    fetch: () => new Response(body, { headers: { "content-type": "application/json" } }),
  };
  serveOverH1(app, {
    port: Number(process.env.PORT ?? 0),
    hostname: "127.0.0.1",
    maxRequestBodySize: 1024 * 1024,
    onError: (error) => console.error(error),
  });
  const server = app.server as NodeServerHandle;
  console.log(JSON.stringify({ message: "listening", port: server.port }));
  const stop = async () => {
    await server.stop(true);
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

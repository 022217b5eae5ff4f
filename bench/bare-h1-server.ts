/**
 * The ceiling's twin over our own HTTP/1.1 transport: `serveOverH1` (src/http/h1) answering every
 * request with one fixed JSON body, as bench/ceiling-server.ts does over `Bun.serve`, so the
 * pinned bench shows what the transport itself costs beside Bun's. Keyed decide's route
 * (POST /v1/decide, what the pinned bench sends) is answered as svc answers it, through the hot
 * path (`NativeRoute.hot`: the light request in, JSON text out); anything else through `fetch`.
 * Run as its own process (`bun bench/bare-h1-server.ts`); prints `{"message":"listening","port":N}`.
 */
import { readFileSync } from "node:fs";
import { serveOverH1 } from "../src/http/h1/server";
import type { NodeServerHandle } from "../src/http/node-server";
import { withHotPath } from "../src/infra/hot-request";

const file = process.env.CEILING_BODY_FILE;
/** Keyed decide's path (src/decide/model.ts), not imported: that module brings the app's schemas. */
const KEYED_DECIDE_PATH = "/v1/decide";
const body = file ? readFileSync(file, "utf8") : '{"decisions":{},"unanswered":[],"preview":false,"exposures":[]}';

if (import.meta.main) {
  const fixed = () => new Response(body, { headers: { "content-type": "application/json" } });
  const keyed = withHotPath(fixed, () => body);
  const app = {
    config: { serve: { routes: { [KEYED_DECIDE_PATH]: { POST: keyed } } } },
    server: undefined as unknown,
    fetch: fixed,
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

/**
 * The ceiling: a bare `Bun.serve` answering every request with one fixed JSON body (by default a
 * real decide answer captured during setup, so both servers put the same bytes on the wire). Run
 * as its own process (`bun bench/ceiling-server.ts`); prints `{"message":"listening","port":N}`.
 */
import { readFileSync } from "node:fs";

const file = process.env.CEILING_BODY_FILE;
const body = file ? readFileSync(file, "utf8") : '{"decisions":{},"unanswered":[],"preview":false,"exposures":[]}';

export function startCeilingServer(port = 0) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch: () => new Response(body, { headers: { "content-type": "application/json" } }),
  });
}

if (import.meta.main) {
  const server = startCeilingServer(Number(process.env.PORT ?? 0));
  console.log(JSON.stringify({ message: "listening", port: server.port }));
  const stop = () => {
    server.stop(true);
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

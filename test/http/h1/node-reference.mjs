// The reference of the differential fuzz (fuzz.test.ts): Node's own HTTP server (llhttp, strict
// mode, as Node ships it), answering each request it parsed with what it saw, in the same form as
// the recording app over our transport. Run with `node`; prints {"port":N} once listening.
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

/** The h1 transport's rule for a Host it builds a URL of (src/http/h1/server.ts). */
const USABLE_HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** Header lines folded as a fetch `Headers` does: names lowercased, repeats joined, sorted. */
function folded(raw) {
  const byName = new Map();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const value = raw[i + 1];
    // Cookie lines join with "; " (RFC 9110 section 5.3), as Bun's Headers joins them.
    const separator = name === "cookie" ? "; " : ", ";
    byName.set(name, byName.has(name) ? `${byName.get(name)}${separator}${value}` : value);
  }
  return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export function startReference(onListening) {
  const server = createServer({ requireHostHeader: false, keepAliveTimeout: 10_000 }, (req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const headers = folded(req.rawHeaders);
      const host = headers.find(([name]) => name === "host")?.[1];
      let url;
      if (host !== undefined && USABLE_HOST.test(host) && req.url.startsWith("/")) {
        try {
          url = new URL(`http://${host}${req.url}`);
        } catch {
          url = undefined;
        }
      }
      if (url === undefined) {
        res.writeHead(400, { "content-length": "0" });
        res.end();
        return;
      }
      const noBody = req.method === "GET" || req.method === "HEAD";
      const seen = {
        method: req.method,
        target: url.pathname + url.search,
        headers,
        body: noBody ? "" : Buffer.concat(chunks).toString("base64"),
      };
      res.writeHead(200, { "x-seen": Buffer.from(JSON.stringify(seen)).toString("base64url"), "content-length": "0" });
      res.end();
    });
  });
  // The refusal is written after the answers to the requests parsed before it (which Node would
  // otherwise lose behind an immediate end), so the client sees every request Node handed on.
  server.on("clientError", (_error, socket) => {
    setTimeout(() => {
      if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      else socket.destroy();
    }, 30);
  });
  server.listen(0, "127.0.0.1", () => onListening(server.address().port));
  return server;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  startReference((port) => console.log(JSON.stringify({ port, node: process.version })));
}

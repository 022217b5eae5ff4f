import { createServer, type Server, Socket } from "node:net";

export type ProxyMode = "forward" | "cut" | "black-hole";

/**
 * A TCP proxy on 127.0.0.1 in front of a real server, for outage tests: `forward` passes bytes
 * both ways; `cut` destroys every connection and refuses new ones (the port is closed);
 * `black-hole` keeps connections open and accepts new ones but passes nothing (a hung server).
 */
export interface TcpProxy {
  readonly port: number;
  /** `target`'s URL with its host and port replaced by the proxy's. */
  url(target: string): string;
  set(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(
  targetHost: string,
  targetPort: number,
  options: {
    /** While forwarding, a client chunk this matches is not passed on: both ends are destroyed. */
    dropWhen?: (chunk: Buffer) => boolean;
  } = {},
): Promise<TcpProxy> {
  let mode: ProxyMode = "forward";
  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (mode !== "forward") {
      // A black hole reads and drops what it is sent, and never answers.
      client.on("data", () => {});
      return;
    }
    const upstream = new Socket();
    track(upstream);
    upstream.connect(targetPort, targetHost);
    client.on("data", (chunk: Buffer) => {
      if (mode !== "forward") return;
      if (options.dropWhen?.(chunk)) {
        client.destroy();
        upstream.destroy();
      } else upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (mode === "forward") client.write(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  const stopListening = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    port,
    url(target) {
      const url = new URL(target);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    async set(next) {
      const was = mode;
      mode = next;
      if (next === "cut") {
        for (const socket of open) socket.destroy();
        if (was !== "cut") await stopListening();
      } else if (was === "cut") {
        await listen(port);
      }
    },
    async close() {
      for (const socket of open) socket.destroy();
      if (mode !== "cut") await stopListening();
    },
  };
}

/**
 * Drives the h1 transport (src/http/h1) without the kernel, for bench/h1-transport-cpu.ts and
 * bench/decide-census.ts: the socket handlers `serveOverH1` hands to `Bun.listen` are taken as it
 * starts, then fed requests on sockets of our own, which take every write whole (a string is
 * encoded, as Bun's socket encodes it before sending).
 */

type Handlers = Record<string, (socket: unknown, data?: unknown) => void>;

/**
 * Runs `start` (which calls `Bun.listen` through the transport) and returns the socket handlers
 * it passed. `listening`: still listen for real (a port for anything else), or only pretend.
 */
export function takeHandlers(start: () => void, listening: boolean): Handlers {
  let handlers: Handlers = {};
  const listen = Bun.listen;
  (Bun as { listen: unknown }).listen = (options: { socket: Handlers }) => {
    handlers = options.socket;
    return listening ? listen(options as never) : { port: 0, stop() {} };
  };
  try {
    start();
  } finally {
    (Bun as { listen: unknown }).listen = listen;
  }
  return handlers;
}

/** `connections` sockets open on `handlers`; `run` sends requests on all of them, turn by turn. */
export function drive(handlers: Handlers, connections: number) {
  const counts = { answered: 0, ok: 0 };
  const sockets = Array.from({ length: connections }, () => ({
    data: undefined as unknown,
    remoteAddress: "127.0.0.1",
    remoteFamily: "IPv4",
    remotePort: 1,
    write(data: Uint8Array | string, start = 0, length?: number) {
      counts.answered++;
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      // "HTTP/1.1 2xx"
      if (bytes[start + 9] === 50) counts.ok++;
      return typeof data === "string" ? bytes.byteLength : (length ?? data.byteLength - start);
    },
    end() {},
    pause() {},
    resume() {},
    setNoDelay() {},
  }));
  for (const socket of sockets) handlers.open?.(socket);
  return {
    counts,
    /** Sends `next()` on every socket, then lets the turn end, until `count` more are answered. */
    async run(count: number, next: () => Uint8Array): Promise<void> {
      const goal = counts.answered + count;
      while (counts.answered < goal) {
        for (const socket of sockets) handlers.data?.(socket, next());
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}

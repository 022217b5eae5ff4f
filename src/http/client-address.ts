import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";
import type { Config } from "../config";

/** The part of the listening server (Bun's `Server`, or node-server's handle) that knows a request's peer. */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

/** Who a request came from, and where it was sent, as the client saw it (docs/deploying.md, "Behind a proxy"). */
export interface ClientAddresses {
  /**
   * The client's address, for every per-client rule: the TCP peer, or, when the peer is a trusted
   * proxy, the right-most `X-Forwarded-For` address that is not itself trusted (Express's `trust
   * proxy`). "unknown" when the server cannot tell (in-process `app.handle`).
   */
  addressOf(server: PeerSource | null | undefined, request: Request): string;
  /** The same rule from the peer address and the `X-Forwarded-For` header (for the transports). */
  addressFrom(peer: string | undefined, forwardedFor: string | null): string;
  /**
   * The request's URL as the client reached it: from a trusted peer, with the scheme of
   * `X-Forwarded-Proto` and the host of `X-Forwarded-Host` (each its first value, when valid);
   * otherwise `request.url` as it is.
   */
  urlOf(server: PeerSource | null | undefined, request: Request): string;
  /** The origin of `urlOf` (the console's same-origin check); null when it does not parse. */
  originOf(server: PeerSource | null | undefined, request: Request): string | null;
}

type Trust = (address: string, hop: number) => boolean;

/** A forwarded header's first value (a chain of proxies lists the client's first), trimmed. */
function firstOf(value: string | null): string | null {
  if (value === null) return null;
  const comma = value.indexOf(",");
  const first = (comma === -1 ? value : value.slice(0, comma)).trim();
  return first === "" ? null : first;
}

/** A host and optional port (a name, an IPv4 or a bracketed IPv6 address), nothing more. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Builds the one rule for who a request came from, from `SVC_TRUSTED_PROXIES` (compiled once).
 *
 * The parsing and the trust test are proxy-addr's (the library behind Express's `trust proxy`).
 * It reads a Node `IncomingMessage`, of which it uses exactly `headers["x-forwarded-for"]` and
 * `socket.remoteAddress`; a fetch `Request` has neither, so it is handed a two-field shim. Only
 * the `X-Forwarded-*` headers are read, never RFC 7239 `Forwarded`, as Express does: a proxy that
 * sets one family passes the other through from the reader untouched, so reading both would let a
 * reader forge whichever one the proxy does not overwrite.
 */
export function clientAddresses(config: Pick<Config, "trustedProxies">): ClientAddresses {
  const peerOf = (server: PeerSource | null | undefined, request: Request) => server?.requestIP(request)?.address;
  if (config.trustedProxies.length === 0) {
    // No proxy is trusted (the default): the peer, and the request as it arrived.
    return {
      addressOf: (server, request) => peerOf(server, request) ?? "unknown",
      addressFrom: (peer) => peer ?? "unknown",
      urlOf: (_server, request) => request.url,
      originOf: (_server, request) => originOfUrl(request.url),
    };
  }
  const trust: Trust = proxyaddr.compile([...config.trustedProxies]);
  const fromTrusted = (server: PeerSource | null | undefined, request: Request) => {
    const peer = peerOf(server, request);
    return peer !== undefined && trust(peer, 0);
  };
  const urlOf = (server: PeerSource | null | undefined, request: Request): string => {
    if (!fromTrusted(server, request)) return request.url;
    const proto = firstOf(request.headers.get("x-forwarded-proto"))?.toLowerCase();
    const host = firstOf(request.headers.get("x-forwarded-host"));
    const scheme = proto === "http" || proto === "https" ? proto : undefined;
    const validHost = host !== null && HOST.test(host) ? host : undefined;
    if (scheme === undefined && validHost === undefined) return request.url;
    try {
      const url = new URL(request.url);
      if (scheme !== undefined) url.protocol = `${scheme}:`;
      if (validHost !== undefined) url.host = validHost;
      return url.href;
    } catch {
      return request.url;
    }
  };
  const addressFrom = (peer: string | undefined, forwardedFor: string | null): string => {
    if (peer === undefined) return "unknown";
    if (forwardedFor === null || !trust(peer, 0)) return peer;
    const shim = { headers: { "x-forwarded-for": forwardedFor }, socket: { remoteAddress: peer } };
    return proxyaddr(shim as unknown as IncomingMessage, trust);
  };
  return {
    addressOf: (server, request) => {
      const peer = peerOf(server, request);
      return peer === undefined ? "unknown" : addressFrom(peer, request.headers.get("x-forwarded-for"));
    },
    addressFrom,
    urlOf,
    originOf: (server, request) => originOfUrl(urlOf(server, request)),
  };
}

function originOfUrl(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

import { describe, expect, it } from "bun:test";
import { clientAddresses, type PeerSource } from "../../src/http/client-address";

/** A server whose every request arrives from `address` (as Bun's and node-server's `requestIP`). */
const peer = (address: string): PeerSource => ({ requestIP: () => ({ address }) });

const request = (headers: Record<string, string> = {}, url = "http://news.example/console/sign-in?x=1") =>
  new Request(url, { headers });

describe("client addresses with no trusted proxy (the default)", () => {
  const clients = clientAddresses({ trustedProxies: [] });

  it("is the peer address, whatever X-Forwarded-For says", () => {
    const forged = request({ "x-forwarded-for": "203.0.113.9" });
    expect(clients.addressOf(peer("127.0.0.1"), forged)).toBe("127.0.0.1");
  });

  it("is unknown when the server cannot tell (in-process)", () => {
    expect(clients.addressOf(null, request())).toBe("unknown");
  });

  it("keeps the request's own scheme and host, whatever X-Forwarded-Proto and -Host say", () => {
    const forged = request({ "x-forwarded-proto": "https", "x-forwarded-host": "evil.example" });
    expect(clients.urlOf(peer("127.0.0.1"), forged)).toBe("http://news.example/console/sign-in?x=1");
    expect(clients.originOf(peer("127.0.0.1"), forged)).toBe("http://news.example");
  });
});

describe("client addresses behind trusted proxies", () => {
  const clients = clientAddresses({ trustedProxies: ["loopback", "10.0.0.0/8"] });

  it("is the right-most X-Forwarded-For address that is not itself trusted", () => {
    const chain = request({ "x-forwarded-for": "198.51.100.1, 203.0.113.9, 10.1.2.3" });
    expect(clients.addressOf(peer("127.0.0.1"), chain)).toBe("203.0.113.9");
  });

  it("ignores what a reader wrote to the left of the address its proxy appended", () => {
    const forged = request({ "x-forwarded-for": "10.9.9.9, 192.0.2.44" });
    expect(clients.addressOf(peer("127.0.0.1"), forged)).toBe("192.0.2.44");
  });

  it("is the left-most address when every hop is trusted", () => {
    expect(clients.addressOf(peer("127.0.0.1"), request({ "x-forwarded-for": "10.0.0.5, 10.0.0.6" }))).toBe("10.0.0.5");
  });

  it("is the peer when the proxy forwarded no X-Forwarded-For", () => {
    expect(clients.addressOf(peer("10.0.0.7"), request())).toBe("10.0.0.7");
  });

  it("is the peer, headers ignored, when the peer is not trusted", () => {
    const forged = request({ "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https" });
    expect(clients.addressOf(peer("192.0.2.1"), forged)).toBe("192.0.2.1");
    expect(clients.originOf(peer("192.0.2.1"), forged)).toBe("http://news.example");
  });

  it("trusts an IPv4 peer written as an IPv4-mapped IPv6 address", () => {
    expect(clients.addressOf(peer("::ffff:127.0.0.1"), request({ "x-forwarded-for": "203.0.113.9" }))).toBe(
      "203.0.113.9",
    );
  });

  it("takes the scheme and host the proxy forwarded (their first values)", () => {
    const forwarded = request({ "x-forwarded-proto": "https, http", "x-forwarded-host": "www.news.example, inner" });
    expect(clients.urlOf(peer("127.0.0.1"), forwarded)).toBe("https://www.news.example/console/sign-in?x=1");
    expect(clients.originOf(peer("127.0.0.1"), request({ "x-forwarded-proto": "HTTPS" }))).toBe("https://news.example");
  });

  it("ignores a forwarded scheme other than http(s) and a host that is not one", () => {
    const odd = request({ "x-forwarded-proto": "javascript", "x-forwarded-host": "evil.example/path@x" });
    expect(clients.urlOf(peer("127.0.0.1"), odd)).toBe("http://news.example/console/sign-in?x=1");
  });

  it("reads no RFC 7239 Forwarded header (only the X-Forwarded-* family, as Express)", () => {
    const other = request({ forwarded: "for=203.0.113.9;proto=https;host=evil.example" });
    expect(clients.addressOf(peer("127.0.0.1"), other)).toBe("127.0.0.1");
    expect(clients.originOf(peer("127.0.0.1"), other)).toBe("http://news.example");
  });
});

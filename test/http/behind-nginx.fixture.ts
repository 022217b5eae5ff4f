import { expect } from "bun:test";
import { type Answer, cookiesOf, type Nginx, throughNginx } from "../helpers/nginx";

/** The publisher's host nginx terminates TLS for, and its origin. */
export const HOST = "news.example";
export const ORIGIN = `https://${HOST}`;
/** Readers' own loopback addresses. */
export const READER_A = "127.0.0.2";
export const READER_B = "127.0.0.3";
export const READER_C = "127.0.0.4";

/** A reader's request through nginx (`send`), as `from` to HOST; `nginx` is read at each request. */
export type Send = (
  from: string,
  method: string,
  path: string,
  headers?: Record<string, string>,
  body?: string,
) => Promise<Answer>;

/**
 * A readers' view of the site through the nginx `nginx()` answers: any request (`send`), a browser
 * decide call, a CORS preflight, and the checks both nginx suites make through them.
 */
export function readersThrough(nginx: () => Nginx) {
  const send: Send = (from, method, path, headers = {}, body) =>
    throughNginx(nginx(), HOST, from, method, path, headers, body);
  const preflight = (origin: string) =>
    send(READER_A, "OPTIONS", "/svc/v1/decide", {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, x-svc-site-id",
    });
  return {
    send,
    preflight,
    /** A browser decide call from `from`. */
    decide: (from: string, headers: Record<string, string> = {}) =>
      send(
        from,
        "POST",
        "/svc/v1/decide",
        { origin: ORIGIN, "x-svc-site-id": "news", "content-type": "application/json", ...headers },
        JSON.stringify({ features: [] }),
      ),
    /**
     * Signs READER_A in by a magic link to reader@example.com (its mail's text from `mailText`),
     * checking the link is on ORIGIN and the cookies are Secure and host-only; the cookie jar.
     */
    async signInByMagicLink(mailText: (address: string) => Promise<string>): Promise<string> {
      const json = { origin: ORIGIN, "x-svc-site-id": "news", "content-type": "application/json" };
      const asked = await send(
        READER_A,
        "POST",
        "/svc/v1/id/sign-in/magic-link",
        json,
        JSON.stringify({ email: "reader@example.com" }),
      );
      expect(asked.status).toBe(200);
      const link = (await mailText("reader@example.com")).match(/https?:\/\/\S+\/id\/magic-link\?\S+/)?.[0] ?? "";
      expect(link).toStartWith(`${ORIGIN}/svc/v1/id/magic-link?`);
      const token = new URL(link).searchParams.get("token") as string;
      const consumed = await send(READER_A, "POST", "/svc/v1/id/magic-link/consume", json, JSON.stringify({ token }));
      expect(consumed.status).toBe(200);
      const cookies = cookiesOf(consumed);
      for (const name of ["svc.session_token", "svc.access"]) {
        const cookie = cookies.find((c) => c.startsWith(`${name}=`)) ?? "";
        expect(cookie).toContain("Secure");
        expect(cookie.toLowerCase()).not.toContain("domain=");
      }
      return cookies.map((c) => c.split(";")[0]).join("; ");
    },
    /** Checks READER_A's session with the cookie `jar`: reader@example.com's, with CORS for ORIGIN. */
    async expectSession(jar: string): Promise<void> {
      const session = await send(READER_A, "GET", "/svc/v1/id/get-session", {
        origin: ORIGIN,
        "x-svc-site-id": "news",
        cookie: jar,
      });
      expect(session.status).toBe(200);
      expect(JSON.parse(session.text).user.email).toBe("reader@example.com");
      expect(session.headers["access-control-allow-origin"]).toBe(ORIGIN);
    },
    /** Checks the journey's forward redirects to its destination. */
    async expectForward(): Promise<void> {
      const res = await send(READER_A, "GET", "/svc/v1/decide/forward?feature=subscribe&site=news&offer=annual");
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe("https://shop.example/checkout?offer=annual");
    },
    /** Checks a preflight from ORIGIN is allowed, with credentials. */
    async expectPreflightAllowed(): Promise<void> {
      const allowed = await preflight(ORIGIN);
      expect(allowed.status).toBe(204);
      expect(allowed.headers["access-control-allow-origin"]).toBe(ORIGIN);
      expect(allowed.headers["access-control-allow-credentials"]).toBe("true");
    },
    /** Checks a preflight from another origin is refused, without CORS headers. */
    async expectPreflightRefused(): Promise<void> {
      const refused = await preflight("https://evil.example");
      expect(refused.status).toBe(403);
      expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
    },
  };
}

import { parseCookie } from "cookie";
import type { Cookie } from "elysia";

export const SESSION_COOKIE = "svc.session_token";
export const ACCESS_COOKIE = "svc.access";
/** Set after a failed automatic exchange: that browser is not tried again until it expires. */
export const EXCHANGE_PAUSE_COOKIE = "svc.exchange_pause";
export const EXCHANGE_PAUSE_SECONDS = 300;

/**
 * Reads one cookie from a Cookie header with the `cookie` package (the first of a repeated name;
 * percent-decoded when it can be). Kept beside Elysia's `cookie` for reading: the jar turns a
 * value that looks like JSON (an upstream cookie starting with `{` or `[`) into an object, where
 * the credential must stay the string the browser sent.
 */
export function readCookie(header: string | null, name: string): string | null {
  if (!header) return null;
  return parseCookie(header)[name] ?? null;
}

/** Elysia's cookie jar of a request (`cookie` in the handler's context). */
export type CookieJar = Record<string, Cookie<unknown>>;

/**
 * Sets a host-only cookie for the whole tenant through Elysia's jar: no Domain, `Path=/`,
 * `HttpOnly`, `Secure`, `SameSite=Lax`, `Max-Age` in whole seconds (never negative); a cookie
 * set to expire also carries `Expires` in 1970. `Cookie.set` is used rather than `remove()`,
 * which writes nothing when the request did not send the cookie: an expiry is always sent.
 */
export function setCookie(jar: CookieJar, name: string, value: string, maxAgeSeconds: number): void {
  const maxAge = Math.max(0, Math.floor(maxAgeSeconds));
  jar[name]!.set({
    value,
    path: "/",
    maxAge,
    ...(maxAge === 0 ? { expires: new Date(0) } : {}),
    httpOnly: true,
    secure: true,
    sameSite: "lax",
  });
}

/** Expires a cookie on the host the request reached (no Domain: a parent-domain cookie survives). */
export function expireCookie(jar: CookieJar, name: string): void {
  setCookie(jar, name, "", 0);
}

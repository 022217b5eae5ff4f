export const SESSION_COOKIE = "svc.session_token";
export const ACCESS_COOKIE = "svc.access";
/** Set after a failed automatic exchange: that browser is not tried again until it expires. */
export const EXCHANGE_PAUSE_COOKIE = "svc.exchange_pause";
export const EXCHANGE_PAUSE_SECONDS = 300;

/** Reads one cookie from a Cookie header without building a map of all of them. */
export function readCookie(header: string | null, name: string): string | null {
  if (!header) return null;
  let start = 0;
  while (start < header.length) {
    let end = header.indexOf(";", start);
    if (end === -1) end = header.length;
    const eq = header.indexOf("=", start);
    if (eq !== -1 && eq < end && header.slice(start, eq).trim() === name) {
      const value = header.slice(eq + 1, end).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return value;
      }
    }
    start = end + 1;
  }
  return null;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  httpOnly?: boolean;
}

/** A host-only cookie for the whole tenant: Path=/, Secure, SameSite=Lax, HttpOnly by default. */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [
    `${name}=${encodeURIComponent(value)}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
  ];
  if (options.maxAgeSeconds <= 0) parts.push("Expires=Thu, 01 Jan 1970 00:00:00 GMT");
  if (options.httpOnly !== false) parts.push("HttpOnly");
  parts.push("Secure", "SameSite=Lax");
  return parts.join("; ");
}

/** Expires a cookie on the host the request reached (no Domain: a parent-domain cookie survives). */
export function expireCookie(name: string): string {
  return serializeCookie(name, "", { maxAgeSeconds: 0 });
}

/** A JSON response carrying several Set-Cookie headers (one header line each). */
export function jsonWithCookies(
  body: unknown,
  cookies: readonly string[],
  headers: Record<string, string> = {},
  status = 200,
): Response {
  const out = new Headers({ "content-type": "application/json", ...headers });
  for (const c of cookies) out.append("set-cookie", c);
  return new Response(JSON.stringify(body), { status, headers: out });
}

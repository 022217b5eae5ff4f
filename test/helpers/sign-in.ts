import { expect } from "bun:test";
import type { Harness } from "./harness";

/** Captures mailed links so tests can sign in through the real routes. */
export function mailbox() {
  const lines: string[] = [];
  return {
    transport: { kind: "log" as const, send: async (m: { text: string }) => void lines.push(m.text) },
    lastToken(): string {
      const text = lines.at(-1) ?? "";
      const token = text.match(/[?&]token=([A-Za-z0-9_-]+)/)?.[1];
      if (!token) throw new Error("no sign-in link mailed");
      return token;
    },
  };
}

/** Signs in by magic link; returns the session token, cookies and user. */
export async function signIn(h: Harness, box: ReturnType<typeof mailbox>, email: string, site = "news") {
  const headers = { "x-svc-site-id": site };
  expect((await h.request("POST", "/v1/id/sign-in/magic-link", { headers, body: { email } })).status).toBe(200);
  await h.deps.outbox.drain();
  const res = await h.request("POST", "/v1/id/magic-link/consume", { headers, body: { token: box.lastToken() } });
  expect(res.status).toBe(200);
  const body = await res.json();
  const cookies = res.headers.getSetCookie();
  const value = (name: string) =>
    cookies
      .find((c) => c.startsWith(`${name}=`))
      ?.split(";")[0]
      ?.slice(name.length + 1) ?? "";
  return {
    token: res.headers.get("set-auth-token") as string,
    access: decodeURIComponent(value("svc.access")),
    userId: body.user.id as string,
    sessionId: body.session.id as string,
    cookie: `svc.session_token=${value("svc.session_token")}; svc.access=${value("svc.access")}`,
  };
}

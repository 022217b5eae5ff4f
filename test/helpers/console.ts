import { expect } from "bun:test";
import type { Harness } from "./harness";

/** Mail captured by a harness's log transport, newest last. */
export function consoleMailbox() {
  const mails: { to: string; text: string }[] = [];
  return {
    mails,
    transport: { kind: "log" as const, send: async (m: { to: string; text: string }) => void mails.push(m) },
    lastLink(to: string): string {
      const mail = mails.filter((m) => m.to === to).at(-1);
      const link = mail?.text.match(/https?:\/\/\S+\/console\/auth\?token=[A-Za-z0-9_-]+/)?.[0];
      if (!link) throw new Error(`no console link mailed to ${to}`);
      return link;
    },
  };
}

/** A browser-like console client over `app.handle`: keeps cookies, reads each form's CSRF token. */
export function consoleClient(h: Harness, origin = "http://localhost") {
  const jar = new Map<string, string>();
  let lastHtml = "";
  const send = async (
    method: string,
    path: string,
    form?: Record<string, string>,
    headers: Record<string, string> = {},
  ) => {
    const all: Record<string, string> = { ...headers };
    if (jar.size > 0) all.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (form !== undefined) {
      body = new URLSearchParams(form).toString();
      all["content-type"] ??= "application/x-www-form-urlencoded";
      all["content-length"] ??= String(Buffer.byteLength(body));
      all.origin ??= origin;
    }
    const res = await h.app.handle(new Request(`${origin}${path}`, { method, headers: all, body, redirect: "manual" }));
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(";");
      const eq = (pair as string).indexOf("=");
      const name = (pair as string).slice(0, eq);
      const value = (pair as string).slice(eq + 1);
      if (/Max-Age=0/.test(cookie)) jar.delete(name);
      else jar.set(name, value);
    }
    const text = await res.text();
    if ((res.headers.get("content-type") ?? "").startsWith("text/html")) lastHtml = text;
    return { status: res.status, headers: res.headers, text };
  };
  const csrf = () => {
    const token = lastHtml.match(/name="_csrf" value="([^"]+)"/)?.[1];
    if (!token) throw new Error("no CSRF token on the last page");
    return token;
  };
  return {
    jar,
    get: (path: string, headers?: Record<string, string>) => send("GET", path, undefined, headers),
    /** Posts a form with the last page's CSRF token (unless the form gives its own `_csrf`). */
    post: (path: string, form: Record<string, string> = {}, headers?: Record<string, string>) =>
      send("POST", path, { _csrf: csrf(), ...form }, headers),
    raw: send,
    csrf,
  };
}

/**
 * Waits for the work a sign-in request handed off (its job: the link and its mail) and sends the
 * mail: a pass the queue had begun before the job was written may miss it, so a second pass runs.
 */
export async function handedOff(h: Harness): Promise<void> {
  await h.deps.jobs.runDue();
  await h.deps.jobs.runDue();
  await h.deps.outbox.drain();
}

/** Signs a console user in through the real pages: form, mailed link, confirm button. */
export async function consoleSignIn(h: Harness, box: ReturnType<typeof consoleMailbox>, email: string) {
  // Past the mailbox's sign-in budget (3 per 10 minutes) of earlier sign-ins: the clock is the harness's.
  h.clock.advance(10 * 60_000 + 1_000);
  const client = consoleClient(h);
  expect((await client.get("/console/sign-in")).status).toBe(200);
  expect((await client.post("/console/sign-in", { email })).status).toBe(200);
  await handedOff(h);
  const link = new URL(box.lastLink(email));
  expect((await client.get(`${link.pathname}${link.search}`)).status).toBe(200);
  const token = link.searchParams.get("token") as string;
  const done = await client.post("/console/auth", { token });
  expect(done.status).toBe(303);
  expect(done.headers.get("location")).toBe("/console");
  return client;
}

/** Adds each `[email, role]` as a console user of tenant "default", expecting 200 for each. */
export async function addConsoleUsers(h: Harness, users: [email: string, role: string][]): Promise<void> {
  for (const [email, role] of users) {
    expect((await h.admin("POST", "/admin/tenants/default/console-users", { email, role })).status).toBe(200);
  }
}

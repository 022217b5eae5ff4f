import { expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { SESSION_TTL_MS } from "../../src/identity/service";
import { hashSecret } from "../../src/keys/key-value";
import { smtpTransport } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { seedSite, startHarness } from "../helpers/harness";
import { startSmtpServer } from "../helpers/smtp";

export const ORIGIN = "https://news.example";
export const MOUNTS = ["/v1", "/svc/v1"] as const;

/** The test site's document: a feature that reads the `org.*` facts. */
export function orgDocument(overrides: Record<string, unknown> = {}) {
  const doc = basicDocument(overrides);
  (doc.features as Record<string, unknown>).team = {
    purpose: "decision",
    outcomes: { manager: { type: "allow" }, seat: { type: "allow" }, none: { type: "deny" }, broken: {} },
    rules: [
      { when: { fact: "org.role", in: ["owner", "admin"] }, then: "manager" },
      { when: { fact: "org.id", exists: true }, then: "seat" },
    ],
    default: "none",
    onError: "broken",
  };
  return doc;
}

export interface Person {
  email: string;
  userId: string;
  sessionId: string;
  token: string;
  /** The session cookie alone. */
  cookie: string;
}

/**
 * A harness on a fresh database with mail on a real SMTP server, a `news` site (svc_only, a
 * feature reading `org.*`) and a `closed` one (external_only).
 */
export async function orgWorld(kind: StoreKind, config: Record<string, string> = {}) {
  const smtp = await startSmtpServer();
  const db = await freshDatabase(kind);
  const h = await startHarness(db, { mailTransport: smtpTransport(smtp.url, "News <news@example.com>"), config });
  const { key } = await seedSite(h, "news", orgDocument());
  await seedSite(h, "closed", orgDocument({ identity: { mode: "external_only" } }));
  const tenantId = "default";

  /** A verified user with a live session, made in the store (sign-in itself is tested elsewhere). */
  async function person(email: string): Promise<Person> {
    const user = await h.deps.identityDeps.identity.findOrCreateByEmail(tenantId, email, true);
    const token = randomBytes(32).toString("base64url");
    const session = await h.deps.identityDeps.identity.createSession(
      tenantId,
      user.id,
      hashSecret(token),
      new Date(h.clock.now() + SESSION_TTL_MS),
    );
    return { email, userId: user.id, sessionId: session.id, token, cookie: `svc.session_token=${token}` };
  }

  /** An organization created by the operator (admin API), owned by `owner`. */
  async function organization(name: string, slug: string, owner: Person) {
    const res = await h.admin("POST", "/admin/tenants/default/organizations", { name, slug, ownerEmail: owner.email });
    expect(res.status).toBe(201);
    const body = await res.json();
    return { id: body.organization.id as string, ownerMemberId: body.owner.id as string };
  }

  /** A call to an organization route with a person's session cookie. */
  function call(
    who: Person | null,
    method: string,
    path: string,
    body?: unknown,
    options: { mount?: string; site?: string; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { "x-svc-site-id": options.site ?? "news", ...options.headers };
    if (who) headers.cookie = who.cookie;
    return h.request(method, `${options.mount ?? "/v1"}${path}`, { headers, body });
  }

  /** Invites `email` (as `by`), returning the invitation. */
  async function invite(by: Person, organizationId: string, email: string, role = "member", extra = {}) {
    const res = await call(by, "POST", "/org/invite-member", { email, role, organizationId, ...extra });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; status: string; email: string; role: string; expiresAt: string };
  }

  /** A fresh access cookie for a person (get-session), as the browser would hold it. */
  async function accessCookie(who: Person): Promise<string> {
    const res = await call(who, "GET", "/id/get-session");
    expect(res.status).toBe(200);
    const access = res.headers
      .getSetCookie()
      .map((c) => c.split(";")[0] as string)
      .find((c) => c.startsWith("svc.access="));
    if (!access) throw new Error("no access cookie");
    return `${who.cookie}; ${access}`;
  }

  /** Browser decide of the `team` feature with the given cookie: the outcome id. */
  async function teamOutcome(cookie: string): Promise<string> {
    const res = await h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news", origin: ORIGIN, cookie },
      body: { features: ["team"] },
    });
    expect(res.status).toBe(200);
    return (await res.json()).decisions.team.outcome;
  }

  async function stop() {
    await h.stop();
    await smtp.stop();
    await db.drop();
  }

  return { h, smtp, db, key, person, organization, call, invite, accessCookie, teamOutcome, stop };
}

export type OrgWorld = Awaited<ReturnType<typeof orgWorld>>;

/** The link in the latest mail to `to`. */
export async function mailedLink(world: OrgWorld, to: string, count: number): Promise<URL> {
  await world.h.deps.outbox.drain();
  const mails = await world.smtp.waitFor(count);
  const mail = mails.filter((m) => m.to.includes(to)).at(-1);
  const match = mail?.text.match(/(https?:\/\/\S+\/org\/invitation\?\S+)/);
  if (!match?.[1]) throw new Error(`no invitation link mailed to ${to}`);
  return new URL(match[1]);
}

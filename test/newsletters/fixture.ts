import { afterAll, beforeAll, expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { SESSION_TTL_MS } from "../../src/identity/service";
import { hashSecret } from "../../src/keys/key-value";
import { type MailTransport, smtpTransport } from "../../src/mail/outbox";
import type { MailBudgetRules } from "../../src/mail-budget/budgets";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type FakeListmonk, startFakeListmonk } from "../helpers/fake-listmonk";
import { seedSite, startHarness } from "../helpers/harness";
import { type ReceivedMail, startSmtpServer } from "../helpers/smtp";

export const ORIGIN = "https://news.example";
/** The origin mailed links are built on (SVC_PUBLIC_URL): HTTPS, as RFC 8058 wants. */
export const PUBLIC_URL = "https://id.news.example";
export const MOUNTS = ["/v1", "/svc/v1"] as const;

/** Newsletter lists: `daily` (double opt-in, the default) and `weekly` (single opt-in). */
export function newsletterDocument(overrides: Record<string, unknown> = {}) {
  const doc = basicDocument({
    newsletters: [
      { slug: "daily", label: "The Daily", description: "Five stories at 7am." },
      { slug: "weekly", label: "The Weekly", description: null, doubleOptIn: false },
    ],
    ...overrides,
  });
  (doc.features as Record<string, unknown>).prompt = {
    purpose: "decision",
    outcomes: { show: { type: "data" }, hide: {} },
    rules: [{ when: { fact: "newsletters.daily", in: ["subscribed", "pending"] }, then: "hide" }],
    default: "show",
    onError: "hide",
  };
  return doc;
}

/** A header of a received mail, unfolded (long headers are folded over lines). */
export function mailHeader(mail: ReceivedMail, name: string): string | null {
  const head = mail.raw.split("\r\n\r\n")[0]?.replace(/\r\n[ \t]+/g, " ") ?? "";
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line === undefined ? null : line.slice(name.length + 1).trim();
}

export interface Person {
  email: string;
  userId: string;
  token: string;
  cookie: string;
}

/**
 * A harness on a fresh database with mail on a real SMTP server, a real identity provider and
 * a fake listmonk (both real HTTP servers on 127.0.0.1): site `news` (svc_only), `dual` and
 * `outside` (external_only), each deploying the two lists.
 */
export async function newsletterWorld(
  kind: StoreKind,
  options: {
    vendor?: boolean;
    config?: Record<string, string>;
    mailTransport?: MailTransport;
    mailBudgets?: MailBudgetRules;
  } = {},
) {
  const smtp = await startSmtpServer();
  const idp: FakeIdp = await startFakeIdp();
  const listmonk: FakeListmonk = await startFakeListmonk();
  const db = await freshDatabase(kind);
  const h = await startHarness(db, {
    mailTransport: options.mailTransport ?? smtpTransport(smtp.url, "News <news@example.com>"),
    config: { SVC_PUBLIC_URL: PUBLIC_URL, SVC_NEWSLETTER_VENDOR_TIMEOUT_MS: "500", ...options.config },
    serviceEnv: { LISTMONK_PASSWORD: listmonk.password },
    mailBudgets: options.mailBudgets,
  });
  const { key } = await seedSite(h, "news", newsletterDocument());
  const upstream = { audience: "news-web", signOutUrl: "https://login.example/out", cookieNames: ["idp_token"] };
  await seedSite(h, "dual", newsletterDocument({ identity: { mode: "dual", upstream } }));
  const outside = await seedSite(h, "outside", newsletterDocument({ identity: { mode: "external_only", upstream } }));
  expect(
    (await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl }))
      .status,
  ).toBe(200);
  if (options.vendor !== false) {
    const res = await h.admin("PUT", "/admin/tenants/default/services/listmonk", {
      url: listmonk.url,
      username: listmonk.username,
      password: "env:LISTMONK_PASSWORD",
    });
    expect(res.status).toBe(200);
  }
  const tenantId = "default";

  /** The deployed lists of a site (ids assigned at deploy). */
  async function lists(site = "news"): Promise<{ daily: string; weekly: string }> {
    const res = await h.request("GET", "/v1/newsletters/lists", { headers: { "x-svc-site-id": site } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { lists: { id: string; slug: string }[] };
    const id = (slug: string) => body.lists.find((l) => l.slug === slug)?.id as string;
    return { daily: id("daily"), weekly: id("weekly") };
  }

  /** A verified user with a live session, made in the store (sign-in is tested elsewhere). */
  async function person(email: string): Promise<Person> {
    const user = await h.deps.identityDeps.identity.findOrCreateByEmail(tenantId, email, true);
    const token = randomBytes(32).toString("base64url");
    await h.deps.identityDeps.identity.createSession(
      tenantId,
      user.id,
      hashSecret(token),
      new Date(h.clock.now() + SESSION_TTL_MS),
    );
    return { email, userId: user.id, token, cookie: `svc.session_token=${token}` };
  }

  /**
   * Runs the work subscribe requests handed off (the anonymous path's job: standings and mails):
   * a pass the queue had begun before a job was written may miss it, so a second pass runs.
   */
  async function handedOff(): Promise<void> {
    await h.deps.jobs.runDue();
    await h.deps.jobs.runDue();
  }

  /**
   * A newsletter route call with the given headers (site `news`, mount `/v1` unless told); after
   * a PUT, what it handed off has run.
   */
  async function call(
    method: string,
    path: string,
    options: { headers?: Record<string, string>; body?: unknown; site?: string; mount?: string; query?: string } = {},
  ) {
    const headers: Record<string, string> = { "x-svc-site-id": options.site ?? "news", ...options.headers };
    const res = await h.request(method, `${options.mount ?? "/v1"}/newsletters/${path}${options.query ?? ""}`, {
      headers,
      body: options.body,
    });
    if (method === "PUT") await handedOff();
    return res;
  }

  /** Statuses by slug from a subscriptions answer. */
  async function statuses(res: Response): Promise<Record<string, string>> {
    const body = (await res.json()) as { subscriptions: { slug: string; status: string }[] };
    return Object.fromEntries(body.subscriptions.map((s) => [s.slug, s.status]));
  }

  /** Sends what the outbox holds and waits for `count` mails in total on the SMTP server. */
  async function mails(count: number): Promise<ReceivedMail[]> {
    await h.deps.outbox.drain();
    return smtp.waitFor(count);
  }

  /** The confirmation link in a mail. */
  function confirmLink(mail: ReceivedMail): URL {
    const match = mail.text.match(/(https:\/\/\S+\/v1\/newsletters\/confirm\?token=[A-Za-z0-9_-]+)/);
    if (!match?.[1]) throw new Error("no confirmation link in the mail");
    return new URL(match[1]);
  }

  /** Opens a mailed link (path and query) in-process with a method. */
  function open(method: string, link: URL, init: { headers?: Record<string, string>; rawBody?: string } = {}) {
    return h.request(method, link.pathname + link.search, init);
  }

  async function stop() {
    await h.stop();
    await smtp.stop();
    await idp.stop();
    listmonk.stop();
    await db.drop();
  }

  return {
    h,
    smtp,
    idp,
    listmonk,
    db,
    key,
    outsideKey: outside.key,
    lists,
    person,
    call,
    handedOff,
    statuses,
    mails,
    confirmLink,
    open,
    stop,
  };
}

export type NewsletterWorld = Awaited<ReturnType<typeof newsletterWorld>>;

/**
 * newsletterWorld(kind) made before the describe block's tests, with `ids`, the news site's lists,
 * and stopped after them (call it inside `describe`; read its members inside tests only).
 */
export function newsletterSuiteWorld(
  kind: StoreKind,
): NewsletterWorld & { readonly ids: { daily: string; weekly: string } } {
  const world = {} as NewsletterWorld & { ids: { daily: string; weekly: string } };
  beforeAll(async () => {
    Object.assign(world, await newsletterWorld(kind));
    world.ids = await world.lists();
  }, 60_000);
  afterAll(() => world.stop(), 60_000);
  return world;
}

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { AuditStore } from "../audit/store";
import { recordAudit } from "../audit/summary";
import { auditWords } from "../audit/words";
import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import type { ClientAddresses } from "../http/client-address";
import { trustedLinkOrigin } from "../identity/link-origin";
import { signInSpend, tooManySignInMails } from "../identity/mail-limits";
import type { IdentityDeps } from "../identity/service";
import { AppError } from "../infra/errors";
import type { JobQueue } from "../jobs/queue";
import { hashSecret } from "../keys/key-value";
import type { KeyService } from "../keys/service";
import type { Logger } from "../logger";
import type { Outbox } from "../mail/outbox";
import type { SiteRegistry } from "../sites/registry";
import type { SiteStore } from "../sites/store";
import {
  CONSOLE_LINK_TTL_MS,
  CONSOLE_PATH,
  CONSOLE_SESSION_TTL_MS,
  type ConsoleRole,
  type ConsoleSession,
  type ConsoleUser,
  isRole,
  normalEmail,
} from "./model";
import type { ConsoleStore } from "./store";

/** What the console's services use of the process' dependencies (`consoleStore` is its own). */
export interface ConsoleDeps {
  readonly config: Config;
  readonly registry: SiteRegistry;
  readonly outbox: Outbox;
  readonly now: () => number;
  readonly logger: Logger;
  readonly audit: AuditStore;
  readonly consoleStore: ConsoleStore;
  readonly siteStore: SiteStore;
  readonly changes: ChangeFeed;
  readonly keys: KeyService;
  readonly identityDeps: IdentityDeps;
  /** Who a request came from and the origin it reached, behind the trusted proxies or not. */
  readonly clients: ClientAddresses;
  /** Where sign-in requests are handed off (the link and its mail are written off the request). */
  readonly jobs: JobQueue;
}

export const newToken = () => randomBytes(32).toString("base64url");

/** The CSRF token of a console session: derived from its cookie, so nothing more is stored. */
export function csrfOf(secret: string, sessionToken: string): string {
  return createHmac("sha256", secret).update(`console-csrf\u0000${sessionToken}`).digest("base64url");
}

export function sameToken(a: string | null | undefined, b: string): boolean {
  if (typeof a !== "string" || a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

const invalidEmail = () =>
  new AppError("validation_failed", "The request failed validation.", [
    { path: "/email", message: "must be an email address" },
  ]);

/** Adds a console user (or changes their role): the CLI's `console-user add` and the admin API. */
export async function putConsoleUser(
  deps: Pick<ConsoleDeps, "consoleStore" | "registry">,
  tenantId: string,
  emailInput: unknown,
  role: unknown,
): Promise<ConsoleUser> {
  if (!deps.registry.hasTenant(tenantId)) throw new AppError("not_found", "Unknown tenant.");
  const email = normalEmail(emailInput);
  if (email === null) throw invalidEmail();
  if (!isRole(role)) {
    throw new AppError("validation_failed", "The request failed validation.", [
      { path: "/role", message: "must be owner, admin or viewer" },
    ]);
  }
  return deps.consoleStore.putUser(tenantId, email, role);
}

export async function removeConsoleUser(
  deps: Pick<ConsoleDeps, "consoleStore" | "registry">,
  tenantId: string,
  emailInput: unknown,
): Promise<{ removed: string }> {
  if (!deps.registry.hasTenant(tenantId)) throw new AppError("not_found", "Unknown tenant.");
  const email = normalEmail(emailInput);
  if (email === null) throw invalidEmail();
  if (!(await deps.consoleStore.removeUser(tenantId, email))) throw new AppError("not_found", "Unknown console user.");
  return { removed: email };
}

/** The job a console sign-in request hands off: whether to mail a link is decided there. */
export const CONSOLE_SIGN_IN_JOB = "console.sign_in";

interface SignInJob {
  readonly tenantId: string;
  readonly email: string;
  readonly origin: string;
}

/**
 * Asks for a console sign-in link: mailed when the address is a console user of the tenant the
 * request's host names; the answer says nothing either way. The request does the same work
 * whatever the address, so neither its answer nor its time tells a console user from anyone
 * else: it checks the address, takes the sign-in mail budgets (per mailbox, per client, per tenant
 * console) and hands the rest to a job in the same transaction. The job looks the address up and,
 * for a console user, writes the link and its mail (already paid for). The link's origin is one
 * the service trusts (identity's rule, src/identity/link-origin.ts), never the caller's choice.
 */
export async function requestSignInLink(
  deps: ConsoleDeps,
  input: { tenantId: string; email: unknown; requestUrl: string; client: string },
): Promise<void> {
  const email = normalEmail(input.email);
  if (email === null) throw invalidEmail();
  deps.outbox.assertCanSend();
  const origin = trustedLinkOrigin(deps.registry, deps.config.publicUrl, input.tenantId, input.requestUrl);
  const job: SignInJob = { tenantId: input.tenantId, email, origin };
  // The identity routes' sign-in budgets: the mailbox's is shared with reader sign-in.
  const spent = await deps.identityDeps.mailBudget.spend(
    "sign_in",
    input.tenantId,
    signInSpend({ address: email, client: input.client, site: CONSOLE_BUDGET_SITE }),
    (tx) => deps.jobs.enqueueIn(tx, CONSOLE_SIGN_IN_JOB, [{ key: newToken(), payload: job }]),
  );
  if (!spent.ok) throw tooManySignInMails(spent.retryAfterSeconds);
  deps.jobs.kick();
}

/** Registers the sign-in job on the queue (src/deps.ts, once per process). */
export function registerConsoleJobs(deps: ConsoleDeps): void {
  deps.jobs.register(CONSOLE_SIGN_IN_JOB, (payload) => mailSignInLink(deps, payload as SignInJob), {
    maxAttempts: 3,
    backoffMs: 2_000,
  });
}

/** The handed-off half of a sign-in request: a link and its mail for a console user, else nothing. */
async function mailSignInLink(deps: ConsoleDeps, job: SignInJob): Promise<void> {
  if (deps.registry.hasTenant(job.tenantId) === false) return;
  const user = await deps.consoleStore.user(job.tenantId, job.email);
  if (user === null) return;
  const token = newToken();
  await deps.identityDeps.mailBudget.paid(async (tx) => {
    await deps.consoleStore.createToken(
      "link",
      hashSecret(token),
      { tenantId: job.tenantId, email: job.email },
      new Date(deps.now() + CONSOLE_LINK_TTL_MS),
      tx,
    );
    await deps.outbox.enqueueIn(tx, {
      tenantId: job.tenantId,
      to: job.email,
      subject: "Your console sign-in link",
      text: `Open this link to sign in to the console (it works once, for 15 minutes):\n\n${job.origin}${CONSOLE_PATH}/auth?token=${token}\n\nIf you did not ask for it, ignore this message.`,
    });
  });
}

/** The console's sign-in counts against a site budget of its own (no reader site is named so). */
const CONSOLE_BUDGET_SITE = "\u0000console";

/** Consumes a sign-in link (once) and starts a session; the cookie value is returned once. */
export async function consumeSignInLink(
  deps: ConsoleDeps,
  token: unknown,
): Promise<{ token: string; email: string; tenantId: string }> {
  const refused = () => new AppError("forbidden", "That sign-in link is invalid, already used or expired.");
  if (typeof token !== "string" || token.length === 0 || token.length > 512) throw refused();
  const owner = await deps.consoleStore.consumeLink(hashSecret(token), new Date(deps.now()));
  // Spent links and ended sessions go with each sign-in: the table stays the size of what is live.
  await deps.consoleStore.sweep(new Date(deps.now()));
  if (owner === null || (await deps.consoleStore.user(owner.tenantId, owner.email)) === null) throw refused();
  const session = newToken();
  await deps.consoleStore.createToken(
    "session",
    hashSecret(session),
    owner,
    new Date(deps.now() + CONSOLE_SESSION_TTL_MS),
  );
  await recordAudit(deps, {
    at: new Date(deps.now()),
    actor: `console:${owner.email}`,
    tenantId: owner.tenantId,
    siteId: null,
    action: "console sign-in",
    target: "",
    summary: "",
    words: auditWords("console sign-in", {}, null, `console:${owner.email}`),
  });
  return { token: session, ...owner };
}

/** The signed-in console user of a session cookie, or null (unknown, expired, user removed). */
export async function consoleSession(deps: ConsoleDeps, token: string | null): Promise<ConsoleSession | null> {
  if (token === null || token.length === 0 || token.length > 512) return null;
  const found = await deps.consoleStore.session(hashSecret(token), new Date(deps.now()));
  if (found === null) return null;
  return {
    tenantId: found.tenantId,
    email: found.email,
    role: found.role as ConsoleRole,
    csrf: csrfOf(deps.config.secret, token),
  };
}

export async function endConsoleSession(deps: ConsoleDeps, token: string | null): Promise<void> {
  if (token === null || token.length === 0 || token.length > 512) return;
  await deps.consoleStore.endSession(hashSecret(token));
}

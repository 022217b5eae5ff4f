import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import { SignInMailLimits } from "../identity/mail-limits";
import type { IdentityStore } from "../identity/store";
import type { JobQueue } from "../jobs/queue";
import type { Logger } from "../logger";
import type { Outbox } from "../mail/outbox";
import type { ServiceConfigs } from "../outside/service-config";
import type { SiteRegistry } from "../sites/registry";
import type { UserStore } from "../users/store";
import { NewsletterFactsCache } from "./facts-cache";
import { UnsubscribeTokens } from "./mail";
import { NewsletterStore } from "./store";
import { registerSyncJob } from "./sync";

export interface NewsletterDeps {
  readonly store: NewsletterStore;
  readonly facts: NewsletterFactsCache;
  readonly unsubscribeTokens: UnsubscribeTokens;
  readonly identity: IdentityStore;
  readonly users: UserStore;
  readonly outbox: Outbox;
  readonly services: ServiceConfigs;
  readonly jobs: JobQueue;
  readonly changes: ChangeFeed;
  readonly registry: SiteRegistry;
  readonly logger: Logger;
  readonly now: () => number;
  /** The service-wide origin for links built outside a request (vendor attributes): SVC_PUBLIC_URL. */
  readonly publicUrl: string | undefined;
  readonly vendorTimeoutMs: number;
  /**
   * Per client and per site limits on anonymous subscribe requests that mail (in memory, per
   * process, as sign-in mail's): one caller cannot make the service mail address after address.
   */
  readonly anonymousMail: SignInMailLimits;
}

/** Anonymous subscribe requests that mail: 20 per 10 minutes per client, 500 per 10 minutes per site. */
export const ANONYMOUS_MAIL_LIMITS = Object.freeze({
  // Per address the stored caps apply (service.ts); this log only bounds memory.
  perAddress: { limit: 1_000, windowMs: 1_000 },
  perClient: { limit: 20, windowMs: 10 * 60_000 },
  perSite: { limit: 500, windowMs: 10 * 60_000 },
});

/** Builds the newsletter deps (src/deps.ts) and registers the vendor sync job on the queue. */
export function createNewsletterDeps(
  input: Pick<
    NewsletterDeps,
    "identity" | "users" | "outbox" | "services" | "jobs" | "changes" | "registry" | "logger" | "now"
  > & {
    readonly db: ConstructorParameters<typeof NewsletterStore>[0];
    readonly config: Config;
  },
): NewsletterDeps {
  const store = new NewsletterStore(input.db);
  const deps: NewsletterDeps = {
    store,
    facts: new NewsletterFactsCache(store),
    unsubscribeTokens: new UnsubscribeTokens(input.config.secret),
    identity: input.identity,
    users: input.users,
    outbox: input.outbox,
    services: input.services,
    jobs: input.jobs,
    changes: input.changes,
    registry: input.registry,
    logger: input.logger,
    now: input.now,
    publicUrl: input.config.publicUrl,
    vendorTimeoutMs: input.config.newsletterVendorTimeoutMs,
    anonymousMail: new SignInMailLimits(ANONYMOUS_MAIL_LIMITS),
  };
  registerSyncJob(deps);
  return deps;
}

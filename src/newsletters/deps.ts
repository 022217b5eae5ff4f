import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import type { IdentityStore } from "../identity/store";
import type { OutsideCalls } from "../infra/tracing";
import type { JobQueue } from "../jobs/queue";
import type { Logger } from "../logger";
import type { Outbox } from "../mail/outbox";
import type { MailBudget } from "../mail-budget/mail-budget";
import type { ServiceConfigs } from "../outside/service-config";
import type { SiteRegistry } from "../sites/registry";
import type { UserStore } from "../users/store";
import { NewsletterFactsCache } from "./facts-cache";
import { UnsubscribeTokens } from "./mail";
import { DrizzleNewsletterStore, type NewsletterStore } from "./store";
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
  readonly vendorLists: Map<string, Map<string, number>>;
  /**
   * The `confirmation` mail budgets (src/mail-budget): per mailbox, per mailbox and list, per
   * client and per site, counted in mails and taken with the confirmations' writes.
   */
  readonly mailBudget: MailBudget;
  /** How calls to the newsletter vendor are traced (UNTRACED when tracing is off). */
  readonly outside?: OutsideCalls;
}

/** Builds the newsletter deps (src/deps.ts) and registers the vendor sync job on the queue. */
export function createNewsletterDeps(
  input: Pick<
    NewsletterDeps,
    | "identity"
    | "users"
    | "outbox"
    | "services"
    | "jobs"
    | "changes"
    | "registry"
    | "logger"
    | "now"
    | "mailBudget"
    | "outside"
  > & {
    readonly db: ConstructorParameters<typeof DrizzleNewsletterStore>[0];
    readonly config: Config;
  },
): NewsletterDeps {
  const store = new DrizzleNewsletterStore(input.db);
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
    vendorLists: new Map(),
    outside: input.outside,
    mailBudget: input.mailBudget,
  };
  registerSyncJob(deps);
  return deps;
}

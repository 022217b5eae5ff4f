import type { CompiledSite } from "../core/compile";
import { BatchLoader } from "../counters/batch-loader";
import type { NewsletterStore } from "./store";

/** A user's stored standings by list id, as the fact cache holds them. */
export type HeldStandings = ReadonlyMap<string, { readonly status: string; readonly pendingUntil: number | null }>;

/** `newsletters.<slug>` facts: every list the document deploys, by slug. */
export type NewsletterFacts = Readonly<Record<string, string>>;

const SEP = "\u0001";
const NONE: HeldStandings = new Map();
const unknownByDocument = new WeakMap<CompiledSite, NewsletterFacts>();

/** Every deployed list `unknown` (an anonymous subject, a user with no standing). */
export function unknownFacts(document: CompiledSite): NewsletterFacts {
  let facts = unknownByDocument.get(document);
  if (facts === undefined) {
    const out: Record<string, string> = {};
    for (const list of document.document.newsletters ?? []) out[list.slug] = "unknown";
    facts = Object.freeze(out);
    unknownByDocument.set(document, facts);
  }
  return facts;
}

/** A user's facts under a document at `now` (a pending standing past its link's life is `unknown`). */
export function factsOf(document: CompiledSite, held: HeldStandings, now: number): NewsletterFacts {
  if (held.size === 0) return unknownFacts(document);
  const out: Record<string, string> = {};
  for (const list of document.document.newsletters ?? []) {
    const standing = list.id === undefined ? undefined : held.get(list.id);
    let status = standing?.status ?? "unknown";
    if (status === "pending" && (standing?.pendingUntil ?? 0) <= now) status = "unknown";
    out[list.slug] = status;
  }
  return Object.freeze(out);
}

/**
 * Users' standings as decide reads them (`newsletters.<slug>`), only for requests that name a
 * feature reading them: a hit costs no I/O; misses are batched and single-flight per tenant.
 * Writes drop the user in every process (change topic `newsletters`, subject: the user id); a
 * load that was in flight when its user was dropped answers its request but is not kept.
 */
export class NewsletterFactsCache {
  private readonly entries = new Map<string, HeldStandings>();
  private readonly loaders = new Map<string, BatchLoader<HeldStandings>>();
  private readonly loading = new Map<string, boolean>();

  constructor(
    private readonly store: NewsletterStore,
    private readonly max = 200_000,
  ) {}

  get(tenantId: string, userId: string): HeldStandings | Promise<HeldStandings> {
    const key = tenantId + SEP + userId;
    const held = this.entries.get(key);
    if (held !== undefined) return held;
    if (!this.loading.has(key)) this.loading.set(key, false);
    return this.loader(tenantId)
      .load(userId)
      .then(
        (standings) => {
          const again = this.entries.get(key);
          if (again !== undefined) return again;
          const dropped = this.loading.get(key);
          this.loading.delete(key);
          if (dropped === false) {
            this.entries.set(key, standings);
            if (this.entries.size > this.max) {
              const oldest = this.entries.keys().next().value;
              if (oldest !== undefined) this.entries.delete(oldest);
            }
          }
          return standings;
        },
        (error: unknown) => {
          this.loading.delete(key);
          throw error;
        },
      );
  }

  /** Drops a user's standings (a change of topic `newsletters`). */
  invalidate(tenantId: string, userId: string): void {
    const key = tenantId + SEP + userId;
    this.entries.delete(key);
    if (this.loading.has(key)) this.loading.set(key, true);
  }

  private loader(tenantId: string): BatchLoader<HeldStandings> {
    let loader = this.loaders.get(tenantId);
    if (loader === undefined) {
      loader = new BatchLoader(
        async (ids) => {
          const out = new Map<string, Map<string, { status: string; pendingUntil: number | null }>>();
          for (const row of await this.store.standingsOfUsers(tenantId, ids)) {
            let held = out.get(row.userId);
            if (held === undefined) {
              held = new Map();
              out.set(row.userId, held);
            }
            held.set(row.listId, { status: row.status, pendingUntil: row.pendingUntil?.getTime() ?? null });
          }
          return out as Map<string, HeldStandings>;
        },
        () => NONE,
      );
      this.loaders.set(tenantId, loader);
    }
    return loader;
  }
}

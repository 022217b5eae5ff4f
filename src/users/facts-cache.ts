import type { GrantFacts } from "../core/types";
import { BatchLoader } from "../counters/batch-loader";
import type { GrantRow, UserRow, UserStore } from "./store";

/** What decide needs of a user: traits and grants, held in memory. */
export interface UserFacts {
  /** null when no such user exists in the tenant. */
  readonly traits: Readonly<Record<string, unknown>> | null;
  /** Held grants as of `validUntil`; recomputed once the earliest expiry passes. */
  grants: GrantFacts;
  validUntil: number;
  readonly held: readonly { readonly grant: string; readonly expiresAt: number | null }[];
}

const SEP = "\u0001";
const NONE: GrantFacts = Object.freeze({});

/**
 * Users' traits and grants for the decide path: a hit costs no I/O; misses are batched and
 * single-flight; a `grants` change from the feed drops the entry, so a grant change reaches
 * decide as soon as the change is applied. Entries are dropped oldest-first past `max`.
 */
export class UserFactsCache {
  private readonly entries = new Map<string, UserFacts>();
  private readonly loaders = new Map<string, BatchLoader<UserFacts>>();

  constructor(
    private readonly store: UserStore,
    private readonly max = 500_000,
  ) {}

  /** Facts of a user, synchronously when held. */
  get(tenantId: string, userId: string, nowMs: number): UserFacts | Promise<UserFacts> {
    const held = this.entries.get(tenantId + SEP + userId);
    if (held) return refresh(held, nowMs);
    return this.loader(tenantId)
      .load(userId)
      .then((facts) => {
        const key = tenantId + SEP + userId;
        const again = this.entries.get(key);
        if (again) return refresh(again, nowMs);
        this.entries.set(key, facts);
        if (this.entries.size > this.max) {
          const oldest = this.entries.keys().next().value;
          if (oldest !== undefined) this.entries.delete(oldest);
        }
        return refresh(facts, nowMs);
      });
  }

  invalidate(tenantId: string, userId: string): void {
    this.entries.delete(tenantId + SEP + userId);
  }

  private loader(tenantId: string): BatchLoader<UserFacts> {
    let loader = this.loaders.get(tenantId);
    if (!loader) {
      loader = new BatchLoader(
        async (ids) => {
          const { users, grants } = await this.store.usersWithGrants(tenantId, ids);
          return new Map(
            users.map((u) => [
              u.id,
              toFacts(
                u,
                grants.filter((g) => g.userId === u.id),
              ),
            ]),
          );
        },
        () => ({ traits: null, grants: NONE, validUntil: Number.POSITIVE_INFINITY, held: [] }),
      );
      this.loaders.set(tenantId, loader);
    }
    return loader;
  }
}

function toFacts(user: UserRow, rows: GrantRow[]): UserFacts {
  const traits = user.traits && typeof user.traits === "object" ? (user.traits as Record<string, unknown>) : {};
  return {
    traits: Object.freeze({ ...traits }),
    grants: NONE,
    validUntil: Number.NEGATIVE_INFINITY,
    held: rows.map((g) => ({ grant: g.grant, expiresAt: g.expiresAt ? g.expiresAt.getTime() : null })),
  };
}

/** Recomputes the held-grant facts when an expiry has passed since they were last built. */
function refresh(facts: UserFacts, nowMs: number): UserFacts {
  if (nowMs < facts.validUntil) return facts;
  const out: Record<string, true> = {};
  let validUntil = Number.POSITIVE_INFINITY;
  for (const g of facts.held) {
    if (g.expiresAt === null || g.expiresAt > nowMs) {
      out[g.grant] = true;
      if (g.expiresAt !== null && g.expiresAt < validUntil) validUntil = g.expiresAt;
    }
  }
  facts.grants = Object.freeze(out);
  facts.validUntil = validUntil;
  return facts;
}

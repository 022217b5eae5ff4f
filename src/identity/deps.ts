import type { Db } from "../../db/client";
import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import type { OutsideCalls } from "../infra/tracing";
import type { SiteRegistry } from "../sites/registry";
import { AccessTokens } from "./access-token";
import type { IdentityDeps } from "./service";
import { DrizzleIdentityStore } from "./store";
import { UpstreamVerifier } from "./upstream";

/**
 * Builds the identity deps (src/deps.ts): the identity store, access tokens and the upstream
 * verifier; a traits change is published on the change feed's `traits` topic.
 */
export function createIdentityDeps(
  input: Pick<IdentityDeps, "users" | "outbox" | "mailBudget" | "logger" | "now" | "organizationClaims"> & {
    readonly db: Db;
    readonly config: Pick<Config, "secret" | "readDeadlineMs" | "idpTimeoutMs">;
    readonly outside: OutsideCalls;
    readonly registry: Pick<SiteRegistry, "identityProvider">;
    readonly changes: Pick<ChangeFeed, "publish">;
  },
): IdentityDeps {
  const { config, registry, changes } = input;
  return {
    identity: new DrizzleIdentityStore(input.db, config.readDeadlineMs),
    users: input.users,
    accessTokens: new AccessTokens(config.secret),
    upstream: new UpstreamVerifier(config.idpTimeoutMs, input.now, input.outside.fetch("idp")),
    outbox: input.outbox,
    mailBudget: input.mailBudget,
    logger: input.logger,
    now: input.now,
    identityProvider: (tenantId) => registry.identityProvider(tenantId),
    organizationClaims: input.organizationClaims,
    traitsChanged: (tenantId, userId) => changes.publish({ topic: "traits", tenantId, subject: userId }),
  };
}

import { member, text } from "./answer";

/**
 * An audit entry in words ("key 'my CMS' issued on site demo by ana@example.com"), from the
 * action's route, its parameters and the parts of its answer that are never secret (ids, names,
 * versions, stages, roles, expiries): the same parts the summaries read (summary.ts). Entries
 * recorded before the words were kept get theirs from the action and target alone, so a name
 * only the answer held is left out there.
 */

type Params = Readonly<Record<string, string | undefined>>;

/** `key 'my CMS'`, or `a key` when the answer did not say (an entry from before words were kept). */
const named = (noun: string, value: unknown) => {
  const name = text(value);
  return name ? `${noun} '${name}'` : `${/^[aeiou]/.test(noun) ? "an" : "a"} ${noun}`;
};

const until = (value: unknown) => (text(value) ? ` until ${text(value).replace("T", " ").slice(0, 16)} UTC` : "");

/** Each action's phrase: what was done to what, without who did it. */
const PHRASES: Record<string, (p: Params, r: unknown) => string> = {
  "POST /tenants": (p, r) =>
    `tenant ${text(member(r, "tenant", "id")) || (p.tenant ?? "")} created${member(r, "tenant", "default") ? " as the default tenant" : ""}`,
  "PUT /tenants/:tenant/identity-provider": (p, r) => {
    const issuer = text(member(r, "identityProvider", "issuer"));
    return `identity provider of tenant ${p.tenant} set${issuer ? ` to ${issuer}` : ""}`;
  },
  "DELETE /tenants/:tenant/identity-provider": (p) => `identity provider of tenant ${p.tenant} removed`,
  "PUT /tenants/:tenant/public-url": (p, r) => {
    const url = text(member(r, "publicUrl"));
    return `public URL of tenant ${p.tenant} set${url ? ` to ${url}` : ""}`;
  },
  "DELETE /tenants/:tenant/public-url": (p) => `public URL of tenant ${p.tenant} removed`,
  "POST /tenants/:tenant/sites": (p, r) =>
    `site ${text(member(r, "site", "id")) || p.site || "(unnamed)"} created in tenant ${p.tenant}`,
  "POST /tenants/:tenant/sites/:site/disable": (p) => `site ${p.site} disabled`,
  "POST /tenants/:tenant/sites/:site/enable": (p) => `site ${p.site} enabled`,
  "POST /tenants/:tenant/sites/:site/deploy": (p, r) => {
    const version = text(member(r, "deployment", "version"));
    const staged = text(member(r, "deployment", "stage")) === "preview";
    const what = version ? `document version ${version}` : "a document";
    return staged ? `${what} staged on site ${p.site}` : `${what} deployed live on site ${p.site}`;
  },
  "POST /tenants/:tenant/sites/:site/documents/:version/publish": (p, r) => {
    const version = Number(text(member(r, "deployment", "version")) || p.version);
    const previous = text(member(r, "deployment", "previousVersion"));
    const was = previous ? ` (live was version ${previous})` : "";
    return previous && Number(previous) > version
      ? `site ${p.site} rolled back to version ${version}${was}`
      : `version ${version} of site ${p.site} published${was}`;
  },
  "POST /tenants/:tenant/sites/:site/keys": (p, r) => {
    const permissions = member(r, "permissions");
    // "default" is what a key without extra permissions lists; only the extras are worth words.
    const extra = Array.isArray(permissions) ? permissions.filter((x) => x !== "default") : [];
    const list = extra.length > 0 ? ` with ${extra.join(", ")}` : "";
    return `${named("key", member(r, "name"))} issued on site ${p.site}${list}${until(member(r, "expiresAt"))}`;
  },
  "POST /tenants/:tenant/sites/:site/keys/:keyId/revoke": (p, r) =>
    `${text(member(r, "key", "name")) ? named("key", member(r, "key", "name")) : `key ${p.keyId}`} revoked on site ${p.site}`,
  "POST /tenants/:tenant/sites/:site/preview-tokens": (p, r) =>
    `preview token minted for site ${p.site}${until(member(r, "expiresAt"))}`,
  "POST /tenants/:tenant/sites/:site/gift-links/:gift/revoke": (p) => `gift link ${p.gift} revoked on site ${p.site}`,
  "POST /tenants/:tenant/users": (p, r) => `${named("user", member(r, "user", "id"))} created in tenant ${p.tenant}`,
  "POST /tenants/:tenant/users/:user/grants": (p, r) =>
    `${named("grant", member(r, "grant", "grant"))} given to user ${p.user}${until(member(r, "grant", "expiresAt"))}`,
  "DELETE /tenants/:tenant/users/:user/grants/:grant": (p) => `grant '${p.grant}' taken from user ${p.user}`,
  "POST /tenants/:tenant/organizations": (p, r) =>
    `${named("organization", member(r, "organization", "slug"))} created in tenant ${p.tenant}`,
  "PUT /tenants/:tenant/services/:service": (p) => `${p.service} settings saved for tenant ${p.tenant}`,
  "DELETE /tenants/:tenant/services/:service": (p) => `${p.service} disconnected from tenant ${p.tenant}`,
  "POST /tenants/:tenant/console-users": (p, r) => {
    const email = text(member(r, "user", "email"));
    const role = text(member(r, "user", "role"));
    return `${email ? `console user ${email}` : "a console user"} added to tenant ${p.tenant}${role ? ` as ${role}` : ""}`;
  },
  "DELETE /tenants/:tenant/console-users/:email": (p) => `console user ${p.email} removed from tenant ${p.tenant}`,
};

/** Who acted, in words: a console user by address, the admin API as the operator token. */
export function actorInWords(actor: string): string {
  if (actor.startsWith("console:")) return actor.slice("console:".length);
  if (actor === "operator") return "the operator token";
  return actor;
}

/** An action in words, with who did it. */
export function auditWords(action: string, params: Params, response: unknown, actor: string): string {
  const who = actorInWords(actor);
  if (action === "console sign-in") return `${who} signed in to the console`;
  const phrase = PHRASES[action];
  if (phrase) return `${phrase(params, response)} by ${who}`.slice(0, 500);
  const target = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  return `${action}${target ? ` (${target})` : ""} by ${who}`.slice(0, 500);
}

/** The words of an entry recorded before they were kept: from its action, target (`k=v ...`) and actor. */
export function wordsOfEntry(entry: { action: string; target: string; actor: string }): string {
  const params: Record<string, string> = {};
  for (const pair of entry.target.split(" ")) {
    const eq = pair.indexOf("=");
    if (eq > 0) params[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return auditWords(entry.action, params, undefined, entry.actor);
}

import { randomBytes } from "node:crypto";
import { compare } from "fast-json-patch";
import { validateSiteDocument } from "../core/document";
import { AppError } from "../infra/errors";
import { redactContentKeys } from "../sites/content-keys";
import { type AdminServiceDeps, requireSite } from "./service";

/** The document history reads and publishes through the site store and the change feed. */
export type DocumentDeps = AdminServiceDeps;

const unknownVersion = () => new AppError("not_found", "Unknown document version.");

/** The site's document history, newest first, with which version is live and which staged. */
export async function listDocuments(deps: DocumentDeps, tenantId: string, siteId: string) {
  const site = await requireSite(deps, tenantId, siteId);
  return {
    site: siteId,
    tenant: tenantId,
    liveVersion: site.liveVersion,
    previewVersion: site.previewVersion,
    documents: await deps.siteStore.listDocuments(tenantId, siteId),
  };
}

/**
 * One stored version with its document (404 "Unknown document version." when there is none).
 * Content keys read as their ids and the fingerprints of their current secrets, never a secret:
 * the document deploys again as it reads (a known id keeps its secret).
 */
export async function documentVersion(deps: DocumentDeps, tenantId: string, siteId: string, version: number) {
  const site = await requireSite(deps, tenantId, siteId);
  const found = await deps.siteStore.loadDocument(tenantId, siteId, version);
  if (!found) throw unknownVersion();
  const fingerprints = await deps.siteStore.contentKeyFingerprints(tenantId, siteId);
  return {
    ...found,
    document: redactContentKeys(found.document, fingerprints),
    live: version === site.liveVersion,
    preview: version === site.previewVersion,
  };
}

/** The site's content keys: ids, fingerprints, made and last rotated (never a secret). */
export async function contentKeysOf(deps: DocumentDeps, tenantId: string, siteId: string) {
  await requireSite(deps, tenantId, siteId);
  return { contentKeys: await deps.siteStore.contentKeys(tenantId, siteId) };
}

/**
 * Replaces a content key's secret: the explicit action (a deploy cannot change a known key's
 * secret). Every process compiles the site again with it, live and staged alike, and so would a
 * rollback: secrets belong to the key, not to a version. With no `secret` given, one is made here
 * (32 random bytes, base64url) and answered this once.
 */
export async function rotateContentKey(
  deps: DocumentDeps,
  tenantId: string,
  siteId: string,
  keyId: string,
  given: string | undefined,
) {
  await requireSite(deps, tenantId, siteId);
  const secret = given ?? randomBytes(32).toString("base64url");
  const contentKey = await deps.siteStore.rotateContentKey(tenantId, siteId, keyId, secret);
  if (contentKey === null) throw new AppError("not_found", "Unknown content key.");
  await deps.changes.publish({ topic: "site", tenantId, subject: siteId });
  return given === undefined ? { contentKey, secret } : { contentKey };
}

/** A stored version's text as its author wrote it (a version stored before that was kept: its data, indented). */
export function authoredText(found: { document: unknown; source: string | null }): string {
  return found.source ?? JSON.stringify(found.document, null, 2);
}

/**
 * A document's normalised text: members sorted by name at every level, two-space indented, so
 * two versions compare line by line whatever order their authors wrote.
 */
export function normalisedText(document: unknown): string {
  return JSON.stringify(sortedMembers(document), null, 2);
}

function sortedMembers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedMembers);
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(value).sort()) {
    // defineProperty: a member named __proto__ stays a member, not the object's prototype.
    Object.defineProperty(out, name, {
      value: sortedMembers(value[name]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * Makes a stored version live: publishing the staged preview, or rolling back to an earlier
 * version. The version is validated again first, since a version stored long ago may fail
 * today's checks (422 with the failing JSON pointers, nothing changed); every process then swaps
 * to it through the change feed, as after a deploy.
 */
export async function publishVersion(deps: DocumentDeps, tenantId: string, siteId: string, version: number) {
  const site = await requireSite(deps, tenantId, siteId);
  const found = await deps.siteStore.loadDocument(tenantId, siteId, version);
  if (!found) throw unknownVersion();
  const checked = validateSiteDocument(found.document);
  if (!checked.ok) {
    throw new AppError("validation_failed", "That version no longer passes today's checks.", checked.errors);
  }
  if (!(await deps.siteStore.setLiveVersion(tenantId, siteId, version))) throw unknownVersion();
  await deps.changes.publish({ topic: "site", tenantId, subject: siteId });
  return { site: siteId, tenant: tenantId, version, stage: "live" as const, previousVersion: site.liveVersion };
}

/**
 * What deploying `document` would change against the live one: the document is validated as a
 * deploy validates it (422 with the failing JSON pointers), then compared with the stored live
 * version (`live: null` and one `add` at the root when nothing is live yet).
 */
export async function diffAgainstLive(deps: DocumentDeps, tenantId: string, siteId: string, document: unknown) {
  const [site] = await deps.siteStore.loadSites({ tenantId, siteId });
  if (!site) throw new AppError("not_found", "Unknown site.");
  const checked = validateSiteDocument(document);
  if (!checked.ok) throw new AppError("validation_failed", "The site document is invalid.", checked.errors);
  // Both sides show content keys as ids and fingerprints: a secret given is compared, not shown.
  const fingerprints = await deps.siteStore.contentKeyFingerprints(tenantId, siteId);
  const live = site.live === null ? null : redactContentKeys(site.live, fingerprints);
  const candidate = redactContentKeys(withKnownListIds(checked.document, site.live), fingerprints);
  return { live: site.liveVersion, changes: diffDocuments(live, candidate) };
}

/**
 * The newsletter lists' ids a deploy would fill in from the live document (src/newsletters/
 * list-ids.ts: a slug keeps its id), so a document that leaves them out shows no change there.
 */
function withKnownListIds(document: unknown, live: unknown): unknown {
  const lists = (document as { newsletters?: unknown }).newsletters;
  const known = (live as { newsletters?: unknown } | null)?.newsletters;
  if (!Array.isArray(lists) || !Array.isArray(known)) return document;
  const ids = new Map<unknown, unknown>();
  for (const l of known) if (isObject(l) && l.id !== undefined) ids.set(l.slug, l.id);
  return {
    ...(document as object),
    newsletters: lists.map((l) =>
      isObject(l) && l.id === undefined && ids.has(l.slug) ? { ...l, id: ids.get(l.slug) } : l,
    ),
  };
}

/** One change between two JSON values, at its JSON pointer (RFC 6901). */
export interface DocumentChange {
  readonly op: "add" | "remove" | "replace";
  readonly path: string;
  /** The value before (remove, replace). */
  readonly from?: unknown;
  /** The value after (add, replace). */
  readonly to?: unknown;
}

/**
 * The changes from JSON value `a` to `b`: fast-json-patch's `compare` (RFC 6902 operations, arrays
 * compared index by index, only add, remove and replace), each with the value it replaces or
 * removes, read from `a` at its path (every such path names a member of `a`: compare emits them
 * before any add). Two values that are not both objects or both arrays differ as a whole.
 */
export function diffDocuments(a: unknown, b: unknown): DocumentChange[] {
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) {
    if (a === undefined || a === null) return b === undefined || b === null ? [] : [{ op: "add", path: "", to: b }];
    if (b === undefined) return [{ op: "remove", path: "", from: a }];
    return Object.is(a, b) ? [] : [{ op: "replace", path: "", from: a, to: b }];
  }
  return compare(a, b).map((o): DocumentChange => {
    if (o.op === "add") return { op: "add", path: o.path, to: o.value };
    if (o.op === "remove") return { op: "remove", path: o.path, from: valueAt(a, o.path) };
    if (o.op === "replace") return { op: "replace", path: o.path, from: valueAt(a, o.path), to: o.value };
    // compare emits no other operation (move, copy, test); a whole replace keeps the list true.
    return { op: "replace", path: "", from: a, to: b };
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === "object";
}

/**
 * The value at a JSON pointer, reading own members only (fast-json-patch's own getter refuses
 * `__proto__` in a path, which is a valid member name in a JSON document).
 */
function valueAt(root: unknown, pointer: string): unknown {
  let at = root;
  for (const raw of pointer.split("/").slice(1)) {
    const name = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, name)) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
}

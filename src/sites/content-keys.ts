import { createHash, timingSafeEqual } from "node:crypto";
import { and, eq, inArray, like, not, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { contentKeys } from "../../db/schema";
import { AppError } from "../infra/errors";
import { SEALED_PREFIX, type SealedText } from "../mail/sealed-text";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** A content key as a document names it: its id, and its secret only on the way in. */
interface KeyEntry {
  id: string;
  secret?: string;
  fingerprint?: string;
}

/** One site's stored key, as the operator sees it: never its secret. */
export interface ContentKeyInfo {
  readonly id: string;
  readonly fingerprint: string;
  /** ISO 8601. */
  readonly createdAt: string;
  /** When its secret was last replaced (ISO 8601), or null. */
  readonly rotatedAt: string | null;
}

/**
 * What tells two secrets apart without showing either: `sha256:` and the first 8 bytes of the
 * secret's SHA-256, in hex (`printf %s "$SECRET" | sha256sum | cut -c1-16` gives the same digits).
 */
export function fingerprintOf(secret: string): string {
  return `sha256:${createHash("sha256").update(secret, "utf8").digest("hex").slice(0, 16)}`;
}

function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

const keysOf = (document: unknown): KeyEntry[] | null => {
  const keys = (document as { contentKeys?: unknown } | null)?.contentKeys;
  return Array.isArray(keys) ? (keys as KeyEntry[]) : null;
};

/**
 * Takes the secrets out of a document before it is stored (inside the deploy's transaction, the
 * site row locked): a new key id's secret is sealed into `content_keys`; a known id keeps its
 * stored secret, so a document read back (ids and fingerprints) deploys as it is. Giving a known
 * id a different secret is refused (422): replacing a secret is an explicit rotation. A new id
 * without a secret is refused too. The document is stored with each key as its id alone.
 */
export async function withContentKeys(
  tx: Tx,
  sealed: SealedText,
  tenantId: string,
  siteId: string,
  document: unknown,
): Promise<unknown> {
  if (keysOf(document) === null) return document;
  const stored = await storedSecrets(tx, sealed, tenantId, [siteId]);
  const taken = takeSecrets(document, stored.get(siteId) ?? new Map<string, string>());
  if (taken.fresh.length > 0) {
    await tx
      .insert(contentKeys)
      .values(taken.fresh.map((k) => ({ tenantId, siteId, keyId: k.keyId, secret: sealed.seal(k.secret) })));
  }
  return taken.document;
}

/**
 * What `withContentKeys` decides, apart from the store: given the site's stored secrets by key id,
 * the document with each key as its id alone and the new keys' secrets to store, or the 422.
 */
export function takeSecrets(
  document: unknown,
  known: ReadonlyMap<string, string>,
): { document: unknown; fresh: { keyId: string; secret: string }[] } {
  const keys = keysOf(document);
  if (keys === null) return { document, fresh: [] };
  const issues: { path: string; message: string }[] = [];
  const fresh: { keyId: string; secret: string }[] = [];
  keys.forEach((key, i) => {
    const secret = known.get(key.id);
    if (key.secret === undefined) {
      if (secret === undefined) {
        issues.push({ path: `/contentKeys/${i}/secret`, message: `the new content key "${key.id}" needs its secret` });
      }
    } else if (secret === undefined) {
      fresh.push({ keyId: key.id, secret: key.secret });
    } else if (!sameSecret(secret, key.secret)) {
      issues.push({
        path: `/contentKeys/${i}/secret`,
        message: `content key "${key.id}" already has a secret (${fingerprintOf(secret)}): leave the secret out to keep it, or rotate it (content-keys rotate)`,
      });
    }
  });
  if (issues.length > 0) throw new AppError("validation_failed", "The site document is invalid.", issues);
  return { document: { ...(document as object), contentKeys: keys.map((k) => ({ id: k.id })) }, fresh };
}

/** The keys' ids and fingerprints in one string: it changes when a key is added or rotated. */
export function contentKeyStamp(secrets: ReadonlyMap<string, string>): string {
  return [...secrets]
    .map(([id, secret]) => `${id}=${fingerprintOf(secret)}`)
    .sort()
    .join(",");
}

/** A stored key as the operator sees it. */
export function contentKeyInfo(
  row: { keyId: string; createdAt: Date; rotatedAt: Date | null },
  secret: string,
): ContentKeyInfo {
  return {
    id: row.keyId,
    fingerprint: fingerprintOf(secret),
    createdAt: row.createdAt.toISOString(),
    rotatedAt: row.rotatedAt?.toISOString() ?? null,
  };
}

/**
 * A document as anyone may see it: each content key as its id and the fingerprint of its secret
 * (the one given, else the one stored now); no secret, ever.
 */
export function redactContentKeys(document: unknown, fingerprints: ReadonlyMap<string, string>): unknown {
  const keys = keysOf(document);
  if (keys === null) return document;
  return {
    ...(document as object),
    contentKeys: keys.map((k) => {
      if (k === null || typeof k !== "object") return k;
      const fingerprint = typeof k.secret === "string" ? fingerprintOf(k.secret) : fingerprints.get(k.id);
      return fingerprint === undefined ? { id: k.id } : { id: k.id, fingerprint };
    }),
  };
}

/** A stored document with its keys' secrets put back, for compiling only (never answered). */
export function withSecrets(document: unknown, secrets: ReadonlyMap<string, string>): unknown {
  const keys = keysOf(document);
  if (keys === null) return document;
  return {
    ...(document as object),
    contentKeys: keys.flatMap((k) => {
      const secret = secrets.get(k.id) ?? k.secret;
      return secret === undefined ? [] : [{ id: k.id, secret }];
    }),
  };
}

/** The opened secrets of the given sites' keys (every site's when `siteIds` is null), by site and id. */
export async function storedSecrets(
  db: Db | Tx,
  sealed: SealedText,
  tenantId: string | null,
  siteIds: readonly string[] | null,
): Promise<Map<string, Map<string, string>>> {
  const rows = await db
    .select({
      tenantId: contentKeys.tenantId,
      siteId: contentKeys.siteId,
      keyId: contentKeys.keyId,
      secret: contentKeys.secret,
    })
    .from(contentKeys)
    .where(
      tenantId === null
        ? undefined
        : and(
            eq(contentKeys.tenantId, tenantId),
            siteIds === null ? undefined : inArray(contentKeys.siteId, [...siteIds]),
          ),
    );
  const out = new Map<string, Map<string, string>>();
  for (const r of rows) {
    const site = tenantId === null ? `${r.tenantId}\u0001${r.siteId}` : r.siteId;
    let keys = out.get(site);
    if (keys === undefined) {
      keys = new Map();
      out.set(site, keys);
    }
    keys.set(r.keyId, sealed.open(r.secret));
  }
  return out;
}

/** One site's keys with their fingerprints, oldest first. */
export async function listContentKeys(
  db: Db,
  sealed: SealedText,
  tenantId: string,
  siteId: string,
): Promise<ContentKeyInfo[]> {
  const rows = await db
    .select()
    .from(contentKeys)
    .where(and(eq(contentKeys.tenantId, tenantId), eq(contentKeys.siteId, siteId)))
    .orderBy(contentKeys.createdAt, contentKeys.keyId);
  return rows.map((r) => contentKeyInfo(r, sealed.open(r.secret)));
}

/** Replaces one key's secret; null when the site has no key of that id. */
export async function rotateStoredKey(
  db: Db,
  sealed: SealedText,
  tenantId: string,
  siteId: string,
  keyId: string,
  secret: string,
): Promise<ContentKeyInfo | null> {
  const [row] = await db
    .update(contentKeys)
    .set({ secret: sealed.seal(secret), rotatedAt: sql`now()` })
    .where(and(eq(contentKeys.tenantId, tenantId), eq(contentKeys.siteId, siteId), eq(contentKeys.keyId, keyId)))
    .returning();
  return row === undefined ? null : contentKeyInfo(row, secret);
}

/**
 * Seals the secrets migration 0015 moved out of the documents in clear (SQL has no SVC_SECRET);
 * run at start, before the sites are loaded. Returns how many it sealed.
 */
export async function sealClearKeys(db: Db, sealed: SealedText): Promise<number> {
  const clear = await db
    .select()
    .from(contentKeys)
    .where(not(like(contentKeys.secret, `${SEALED_PREFIX}%`)));
  for (const r of clear) {
    await db
      .update(contentKeys)
      .set({ secret: sealed.seal(r.secret) })
      .where(
        and(
          eq(contentKeys.tenantId, r.tenantId),
          eq(contentKeys.siteId, r.siteId),
          eq(contentKeys.keyId, r.keyId),
          eq(contentKeys.secret, r.secret),
        ),
      );
  }
  return clear.length;
}

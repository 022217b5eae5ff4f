import { and, eq, inArray, like, not, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { contentKeys } from "../../db/schema";
import { SEALED_PREFIX, type SealedText } from "../mail/sealed-text";
import { type ContentKeyInfo, contentKeyInfo, keysOf, takeSecrets } from "./content-keys";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

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

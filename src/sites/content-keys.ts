import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "../infra/errors";

// The keys' rules, apart from their table (content-key-store.ts): the site registry compiles
// documents with `withSecrets` among the modules keyed decide runs on, which load no drizzle.

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

/** A document's content keys as given, or null when it names none. */
export const keysOf = (document: unknown): KeyEntry[] | null => {
  const keys = (document as { contentKeys?: unknown } | null)?.contentKeys;
  return Array.isArray(keys) ? (keys as KeyEntry[]) : null;
};

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

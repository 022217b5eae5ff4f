import { and, desc, eq, inArray, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { siteDocuments, sites, tenantHosts, tenants } from "../../db/schema";
import type { SealedText } from "../mail/sealed-text";
import { listContentKeys, rotateStoredKey, sealClearKeys, storedSecrets, withContentKeys } from "./content-key-store";
import { type ContentKeyInfo, contentKeyStamp } from "./content-keys";
import { withNewsletterIds } from "./newsletter-list-ids";
import { withoutSecrets } from "./source-secrets";

/** A tenant's upstream identity provider: who issues its readers' tokens, and where its keys are. */
export interface TenantIdentityProvider {
  issuer: string;
  jwksUrl: string;
}

export interface TenantRow {
  id: string;
  isDefault: boolean;
  hosts: string[];
  identityProvider: TenantIdentityProvider | null;
  /** The origin links in this tenant's mail are built on; null when not configured. */
  publicUrl: string | null;
}

export interface SiteRow {
  tenantId: string;
  id: string;
  disabled: boolean;
  liveVersion: number | null;
  previewVersion: number | null;
}

/** One stored version of a site's document, as the history lists it. */
export interface DocumentVersion {
  version: number;
  /** How it was deployed: live, or staged as the preview. */
  stage: "live" | "preview";
  /** ISO 8601. */
  createdAt: string;
  /** Whether it is the site's live (or staged preview) document now. */
  live: boolean;
  preview: boolean;
}

/** One stored version: the document as data, and the text its author wrote. */
export interface StoredDocument {
  version: number;
  stage: "live" | "preview";
  /** ISO 8601. */
  createdAt: string;
  /** The validated document (jsonb: Postgres' key order, newsletter list ids filled in). */
  document: unknown;
  /** The document as its author wrote it; null for a version stored before authored text was kept. */
  source: string | null;
}

/** Most versions a history lists (the newest). */
export const DOCUMENT_HISTORY_LIMIT = 200;

export interface SiteWithDocuments extends SiteRow {
  /** The stored documents: each content key as its id only (secrets live in `contentSecrets`). */
  live: unknown | null;
  preview: unknown | null;
  /** The site's content keys' secrets by key id, for compiling only: never answered or logged. */
  contentSecrets: ReadonlyMap<string, string>;
  /** The keys' ids and fingerprints in one string: it changes when a key is added or rotated. */
  contentKeyStamp: string;
}

/**
 * Where tenants, host names, sites, versioned site documents and the sites' content keys live:
 * Postgres behind this interface, or the in-memory twin (one contract suite holds both).
 */
export interface SiteStore {
  /** The site's content keys: ids, fingerprints and when they were made and last rotated (oldest first). */
  contentKeys(tenantId: string, siteId: string): Promise<ContentKeyInfo[]>;
  /** The fingerprint of each of the site's content keys, by id (what a redacted document shows). */
  contentKeyFingerprints(tenantId: string, siteId: string): Promise<Map<string, string>>;
  /** Replaces one content key's secret; null when the site has no key of that id. */
  rotateContentKey(tenantId: string, siteId: string, keyId: string, secret: string): Promise<ContentKeyInfo | null>;
  /** Seals secrets a migration left in clear; run once at start. Answers how many it sealed. */
  sealContentKeys(): Promise<number>;
  /** By id; each tenant's hosts in the order they were added. */
  listTenants(): Promise<TenantRow[]>;
  /** Sets (or, with null, clears) the origin the tenant's mailed links are built on; false: no such tenant. */
  setPublicUrl(tenantId: string, publicUrl: string | null): Promise<boolean>;
  /** Connects (or, with null, disconnects) the tenant's upstream identity provider; false: no such tenant. */
  setIdentityProvider(tenantId: string, idp: TenantIdentityProvider | null): Promise<boolean>;
  /**
   * Creates a tenant with its host names and public URL; optionally makes it the default tenant
   * (and no other). A host already taken refuses it before an existing id does; nothing is written
   * on a refusal. The same host twice in `hosts` rejects (a unique index).
   */
  createTenant(
    id: string,
    hosts: string[],
    isDefault: boolean,
    publicUrl?: string | null,
  ): Promise<"created" | "exists" | "host_taken">;
  createSite(tenantId: string, id: string): Promise<"created" | "exists" | "no_tenant">;
  /** The tenant's sites by id. */
  listSites(tenantId: string): Promise<SiteRow[]>;
  /** False when there is no such site. */
  setDisabled(tenantId: string, id: string, disabled: boolean): Promise<boolean>;
  /**
   * Stores a new document version (the site's highest plus one) and makes it the live (or staged
   * preview) one: the validated document as data (newsletter lists' ids filled in, content keys
   * as their ids, their secrets kept sealed beside it), and `source`, the text its author wrote
   * without secrets; `now` stamps it. A refused document (422) stores nothing.
   */
  storeDocument(
    tenantId: string,
    siteId: string,
    document: unknown,
    stage: "live" | "preview",
    source: string,
    now: number,
  ): Promise<number>;
  /** The site's stored versions, newest first (at most `limit`); empty for an unknown site. */
  listDocuments(tenantId: string, siteId: string, limit?: number): Promise<DocumentVersion[]>;
  /** One stored version with its document and its author's text, or null when the site has no such version. */
  loadDocument(tenantId: string, siteId: string, version: number): Promise<StoredDocument | null>;
  /**
   * Makes a stored version the live one (publishing the staged preview, or rolling back); false
   * when the site has no such version. A staged preview that is the version published is no
   * longer staged.
   */
  setLiveVersion(tenantId: string, siteId: string, version: number): Promise<boolean>;
  /** Every site with its live and preview documents (one site when ids are given), in no set order. */
  loadSites(filter?: { tenantId: string; siteId: string }): Promise<SiteWithDocuments[]>;
}

/** A version as the history lists it, given the site's live and preview versions. */
export function historyLine(
  row: { version: number; stage: "live" | "preview"; createdAt: Date },
  site: { liveVersion: number | null; previewVersion: number | null },
): DocumentVersion {
  return {
    version: row.version,
    stage: row.stage,
    createdAt: row.createdAt.toISOString(),
    live: row.version === site.liveVersion,
    preview: row.version === site.previewVersion,
  };
}

/** A tenant's identity provider: both columns set, else none. */
export const identityProviderOf = (t: { idpIssuer: string | null; idpJwksUrl: string | null }) =>
  t.idpIssuer && t.idpJwksUrl ? { issuer: t.idpIssuer, jwksUrl: t.idpJwksUrl } : null;

/**
 * Postgres-backed store of tenants, host names, sites, versioned site documents and the sites'
 * content keys (sealed with `sealed`, outside the documents: src/sites/content-key-store.ts).
 */
export class DrizzleSiteStore implements SiteStore {
  constructor(
    private readonly db: Db,
    private readonly sealed: SealedText,
  ) {}

  /** The site's content keys: ids, fingerprints and when they were made and last rotated. */
  contentKeys(tenantId: string, siteId: string): Promise<ContentKeyInfo[]> {
    return listContentKeys(this.db, this.sealed, tenantId, siteId);
  }

  /** The fingerprint of each of the site's content keys, by id (what a redacted document shows). */
  async contentKeyFingerprints(tenantId: string, siteId: string): Promise<Map<string, string>> {
    return new Map((await this.contentKeys(tenantId, siteId)).map((k) => [k.id, k.fingerprint]));
  }

  /** Replaces one content key's secret; null when the site has no key of that id. */
  rotateContentKey(tenantId: string, siteId: string, keyId: string, secret: string): Promise<ContentKeyInfo | null> {
    return rotateStoredKey(this.db, this.sealed, tenantId, siteId, keyId, secret);
  }

  /** Seals secrets a migration left in clear; run once at start. */
  sealContentKeys(): Promise<number> {
    return sealClearKeys(this.db, this.sealed);
  }

  async listTenants(): Promise<TenantRow[]> {
    const rows = await this.db.select().from(tenants).orderBy(tenants.id);
    const hosts = await this.db.select().from(tenantHosts);
    return rows.map((t) => ({
      id: t.id,
      isDefault: t.isDefault,
      hosts: hosts.filter((h) => h.tenantId === t.id).map((h) => h.host),
      identityProvider: identityProviderOf(t),
      publicUrl: t.publicUrl,
    }));
  }

  /** Sets (or, with null, clears) the origin the tenant's mailed links are built on. */
  async setPublicUrl(tenantId: string, publicUrl: string | null): Promise<boolean> {
    const rows = await this.db.update(tenants).set({ publicUrl }).where(eq(tenants.id, tenantId)).returning();
    return rows.length > 0;
  }

  /** Connects (or, with null, disconnects) the tenant's upstream identity provider. */
  async setIdentityProvider(tenantId: string, idp: TenantIdentityProvider | null): Promise<boolean> {
    const rows = await this.db
      .update(tenants)
      .set({ idpIssuer: idp?.issuer ?? null, idpJwksUrl: idp?.jwksUrl ?? null })
      .where(eq(tenants.id, tenantId))
      .returning();
    return rows.length > 0;
  }

  /** Creates a tenant with its host names and public URL; optionally makes it the default tenant. */
  async createTenant(
    id: string,
    hosts: string[],
    isDefault: boolean,
    publicUrl: string | null = null,
  ): Promise<"created" | "exists" | "host_taken"> {
    return this.db.transaction(async (tx) => {
      if (hosts.length > 0) {
        const taken = await tx.select().from(tenantHosts).where(inArray(tenantHosts.host, hosts));
        if (taken.length > 0) return "host_taken";
      }
      const inserted = await tx.insert(tenants).values({ id, isDefault, publicUrl }).onConflictDoNothing().returning();
      if (inserted.length === 0) return "exists";
      if (hosts.length > 0) await tx.insert(tenantHosts).values(hosts.map((host) => ({ host, tenantId: id })));
      if (isDefault) await tx.update(tenants).set({ isDefault: false }).where(sql`${tenants.id} <> ${id}`);
      return "created";
    });
  }

  async createSite(tenantId: string, id: string): Promise<"created" | "exists" | "no_tenant"> {
    const tenant = await this.db.select().from(tenants).where(eq(tenants.id, tenantId));
    if (tenant.length === 0) return "no_tenant";
    const inserted = await this.db.insert(sites).values({ tenantId, id }).onConflictDoNothing().returning();
    return inserted.length > 0 ? "created" : "exists";
  }

  async listSites(tenantId: string): Promise<SiteRow[]> {
    return this.db
      .select({
        tenantId: sites.tenantId,
        id: sites.id,
        disabled: sites.disabled,
        liveVersion: sites.liveVersion,
        previewVersion: sites.previewVersion,
      })
      .from(sites)
      .where(eq(sites.tenantId, tenantId))
      .orderBy(sites.id);
  }

  async setDisabled(tenantId: string, id: string, disabled: boolean): Promise<boolean> {
    const rows = await this.db
      .update(sites)
      .set({ disabled })
      .where(and(eq(sites.tenantId, tenantId), eq(sites.id, id)))
      .returning();
    return rows.length > 0;
  }

  /**
   * Stores a new document version and makes it the live (or staged preview) one: the validated
   * document as data, and beside it `source`, the text its author wrote (jsonb keeps neither the
   * author's spacing nor key order); `now` stamps it (the retention sweep ages versions by the
   * same clock, src/retention).
   */
  async storeDocument(
    tenantId: string,
    siteId: string,
    document: unknown,
    stage: "live" | "preview",
    source: string,
    now: number,
  ): Promise<number> {
    return this.db.transaction(async (tx) => {
      // Lock the site row so concurrent deploys get distinct versions.
      await tx.execute(sql`select 1 from sites where tenant_id = ${tenantId} and id = ${siteId} for update`);
      const [max] = await tx
        .select({ v: sql<number>`coalesce(max(${siteDocuments.version}), 0)` })
        .from(siteDocuments)
        .where(and(eq(siteDocuments.tenantId, tenantId), eq(siteDocuments.siteId, siteId)));
      const version = Number(max?.v ?? 0) + 1;
      // Newsletter lists get their stable ids here, under the site's lock (src/newsletters).
      const withIds = await withNewsletterIds(tx, tenantId, siteId, document);
      // Secrets go to content_keys (sealed); the version keeps each key's id only, and its
      // author's text loses them too (src/sites/source-secrets.ts).
      const stored = await withContentKeys(tx, this.sealed, tenantId, siteId, withIds);
      await tx.insert(siteDocuments).values({
        tenantId,
        siteId,
        version,
        stage,
        document: stored,
        source: withoutSecrets(source),
        createdAt: new Date(now),
      });
      await tx
        .update(sites)
        .set(stage === "live" ? { liveVersion: version } : { previewVersion: version })
        .where(and(eq(sites.tenantId, tenantId), eq(sites.id, siteId)));
      return version;
    });
  }

  /** The site's stored versions, newest first (at most `limit`); empty for an unknown site. */
  async listDocuments(tenantId: string, siteId: string, limit = DOCUMENT_HISTORY_LIMIT): Promise<DocumentVersion[]> {
    const [site] = await this.db
      .select({ liveVersion: sites.liveVersion, previewVersion: sites.previewVersion })
      .from(sites)
      .where(and(eq(sites.tenantId, tenantId), eq(sites.id, siteId)));
    if (!site) return [];
    const rows = await this.db
      .select({ version: siteDocuments.version, stage: siteDocuments.stage, createdAt: siteDocuments.createdAt })
      .from(siteDocuments)
      .where(and(eq(siteDocuments.tenantId, tenantId), eq(siteDocuments.siteId, siteId)))
      .orderBy(desc(siteDocuments.version))
      .limit(limit);
    return rows.map((r) => historyLine(r, site));
  }

  /** One stored version with its document and its author's text, or null when the site has no such version. */
  async loadDocument(tenantId: string, siteId: string, version: number): Promise<StoredDocument | null> {
    const [row] = await this.db
      .select()
      .from(siteDocuments)
      .where(
        and(eq(siteDocuments.tenantId, tenantId), eq(siteDocuments.siteId, siteId), eq(siteDocuments.version, version)),
      );
    if (!row) return null;
    return {
      version: row.version,
      stage: row.stage,
      createdAt: row.createdAt.toISOString(),
      document: row.document,
      source: row.source,
    };
  }

  /**
   * Makes a stored version the live one (publishing the staged preview, or rolling back); false
   * when the site has no such version. A staged preview that is the version published is no
   * longer staged: nothing is left to preview.
   */
  async setLiveVersion(tenantId: string, siteId: string, version: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // The site row's lock orders this with deploys (storeDocument) and other publishes.
      await tx.execute(sql`select 1 from sites where tenant_id = ${tenantId} and id = ${siteId} for update`);
      const [found] = await tx
        .select({ version: siteDocuments.version })
        .from(siteDocuments)
        .where(
          and(
            eq(siteDocuments.tenantId, tenantId),
            eq(siteDocuments.siteId, siteId),
            eq(siteDocuments.version, version),
          ),
        );
      if (!found) return false;
      await tx
        .update(sites)
        .set({
          liveVersion: version,
          previewVersion: sql`case when ${sites.previewVersion} = ${version} then null else ${sites.previewVersion} end`,
        })
        .where(and(eq(sites.tenantId, tenantId), eq(sites.id, siteId)));
      return true;
    });
  }

  /** Every site with its live and preview documents (one site when ids are given). */
  async loadSites(filter?: { tenantId: string; siteId: string }): Promise<SiteWithDocuments[]> {
    const rows = await this.db
      .select()
      .from(sites)
      .where(filter ? and(eq(sites.tenantId, filter.tenantId), eq(sites.id, filter.siteId)) : undefined);
    const versions = rows.flatMap((r) =>
      [r.liveVersion, r.previewVersion]
        .filter((v): v is number => v !== null)
        .map((v) =>
          and(eq(siteDocuments.tenantId, r.tenantId), eq(siteDocuments.siteId, r.id), eq(siteDocuments.version, v)),
        ),
    );
    const docs =
      versions.length > 0
        ? await this.db
            .select({
              tenantId: siteDocuments.tenantId,
              siteId: siteDocuments.siteId,
              version: siteDocuments.version,
              document: siteDocuments.document,
            })
            .from(siteDocuments)
            .where(or(...versions))
        : [];
    const docOf = (r: (typeof rows)[number], v: number | null) =>
      v === null
        ? null
        : (docs.find((d) => d.tenantId === r.tenantId && d.siteId === r.id && d.version === v)?.document ?? null);
    const secrets = filter
      ? await storedSecrets(this.db, this.sealed, filter.tenantId, [filter.siteId])
      : await storedSecrets(this.db, this.sealed, null, null);
    return rows.map((r) => {
      const contentSecrets = secrets.get(filter ? r.id : `${r.tenantId}\u0001${r.id}`) ?? new Map<string, string>();
      return {
        tenantId: r.tenantId,
        id: r.id,
        disabled: r.disabled,
        liveVersion: r.liveVersion,
        previewVersion: r.previewVersion,
        live: docOf(r, r.liveVersion),
        preview: docOf(r, r.previewVersion),
        contentSecrets,
        contentKeyStamp: contentKeyStamp(contentSecrets),
      };
    });
  }
}

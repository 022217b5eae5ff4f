import { asJsonb, copyRow, UniqueViolation } from "../infra/memory-rows";
import { SEALED_PREFIX, type SealedText } from "../mail/sealed-text";
import { type ContentKeyInfo, contentKeyInfo, contentKeyStamp, takeSecrets } from "./content-keys";
import { assignListIds, givenListIds, listsOf } from "./newsletter-list-ids";
import { withoutSecrets } from "./source-secrets";
import {
  DOCUMENT_HISTORY_LIMIT,
  type DocumentVersion,
  historyLine,
  identityProviderOf,
  type SiteRow,
  type SiteStore,
  type SiteWithDocuments,
  type StoredDocument,
  type TenantIdentityProvider,
  type TenantRow,
} from "./store";

interface HeldTenant {
  id: string;
  isDefault: boolean;
  idpIssuer: string | null;
  idpJwksUrl: string | null;
  publicUrl: string | null;
}

/** A content key: its secret sealed, as `content_keys` holds it; `write` orders keys made in the same millisecond. */
interface HeldKey {
  keyId: string;
  secret: string;
  createdAt: Date;
  rotatedAt: Date | null;
  write: number;
}

interface HeldDocument {
  version: number;
  stage: "live" | "preview";
  createdAt: Date;
  document: unknown;
  source: string | null;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const siteKey = (tenantId: string, siteId: string): string => JSON.stringify([tenantId, siteId]);
const repeats = (values: readonly string[]): boolean => new Set(values).size < values.length;

/**
 * Tenants, hosts, sites, their document versions, content keys (sealed with `sealed`, as the
 * drizzle store seals them) and newsletter list ids in memory, for tests that need no Postgres;
 * held to the drizzle store by one contract suite. A refused deploy writes nothing, as the
 * drizzle store's transaction rolls back.
 */
export class MemorySiteStore implements SiteStore {
  private readonly tenants = new Map<string, HeldTenant>();
  /** Host name to tenant id, in the order added. */
  private readonly hosts = new Map<string, string>();
  private readonly sites = new Map<string, SiteRow>();
  private readonly documents = new Map<string, HeldDocument[]>();
  private readonly keys = new Map<string, Map<string, HeldKey>>();
  /** Each site's newsletter lists (slug to id); `listIds` holds every site's ids, unique across tenants. */
  private readonly lists = new Map<string, Map<string, string>>();
  private readonly listIds = new Set<string>();
  private writes = 0;

  constructor(
    private readonly sealed: SealedText,
    private readonly now: () => number = Date.now,
  ) {}

  async contentKeys(tenantId: string, siteId: string): Promise<ContentKeyInfo[]> {
    return [...(this.keys.get(siteKey(tenantId, siteId))?.values() ?? [])]
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.write - b.write || byText(a.keyId, b.keyId))
      .map((k) => contentKeyInfo(k, this.sealed.open(k.secret)));
  }

  async contentKeyFingerprints(tenantId: string, siteId: string): Promise<Map<string, string>> {
    return new Map((await this.contentKeys(tenantId, siteId)).map((k) => [k.id, k.fingerprint]));
  }

  async rotateContentKey(tenantId: string, siteId: string, keyId: string, secret: string) {
    const key = this.keys.get(siteKey(tenantId, siteId))?.get(keyId);
    if (key === undefined) return null;
    key.secret = this.sealed.seal(secret);
    key.rotatedAt = new Date(this.now());
    return contentKeyInfo(key, secret);
  }

  async sealContentKeys(): Promise<number> {
    let sealed = 0;
    for (const site of this.keys.values())
      for (const key of site.values()) {
        if (key.secret.startsWith(SEALED_PREFIX)) continue;
        key.secret = this.sealed.seal(key.secret);
        sealed += 1;
      }
    return sealed;
  }

  /** A key whose secret is in clear, as migration 0015 left them (for tests of `sealContentKeys`). */
  holdClearKey(tenantId: string, siteId: string, keyId: string, secret: string): void {
    this.heldKeys(siteKey(tenantId, siteId)).set(keyId, {
      keyId,
      secret,
      createdAt: new Date(this.now()),
      rotatedAt: null,
      write: ++this.writes,
    });
  }

  async listTenants(): Promise<TenantRow[]> {
    return [...this.tenants.values()]
      .sort((a, b) => byText(a.id, b.id))
      .map((t) => ({
        id: t.id,
        isDefault: t.isDefault,
        hosts: [...this.hosts].filter(([, tenantId]) => tenantId === t.id).map(([host]) => host),
        identityProvider: identityProviderOf(t),
        publicUrl: t.publicUrl,
      }));
  }

  async setPublicUrl(tenantId: string, publicUrl: string | null): Promise<boolean> {
    const tenant = this.tenants.get(tenantId);
    if (tenant !== undefined) tenant.publicUrl = publicUrl;
    return tenant !== undefined;
  }

  async setIdentityProvider(tenantId: string, idp: TenantIdentityProvider | null): Promise<boolean> {
    const tenant = this.tenants.get(tenantId);
    if (tenant === undefined) return false;
    tenant.idpIssuer = idp?.issuer ?? null;
    tenant.idpJwksUrl = idp?.jwksUrl ?? null;
    return true;
  }

  async createTenant(id: string, hosts: string[], isDefault: boolean, publicUrl: string | null = null) {
    if (hosts.some((host) => this.hosts.has(host))) return "host_taken" as const;
    if (this.tenants.has(id)) return "exists" as const;
    if (repeats(hosts)) throw new UniqueViolation("tenant_hosts_pkey");
    if (isDefault) for (const tenant of this.tenants.values()) tenant.isDefault = false;
    this.tenants.set(id, { id, isDefault, idpIssuer: null, idpJwksUrl: null, publicUrl });
    for (const host of hosts) this.hosts.set(host, id);
    return "created" as const;
  }

  async createSite(tenantId: string, id: string) {
    if (!this.tenants.has(tenantId)) return "no_tenant" as const;
    const key = siteKey(tenantId, id);
    if (this.sites.has(key)) return "exists" as const;
    this.sites.set(key, { tenantId, id, disabled: false, liveVersion: null, previewVersion: null });
    return "created" as const;
  }

  async listSites(tenantId: string): Promise<SiteRow[]> {
    return [...this.sites.values()]
      .filter((s) => s.tenantId === tenantId)
      .sort((a, b) => byText(a.id, b.id))
      .map(copyRow);
  }

  async setDisabled(tenantId: string, id: string, disabled: boolean): Promise<boolean> {
    const site = this.sites.get(siteKey(tenantId, id));
    if (site !== undefined) site.disabled = disabled;
    return site !== undefined;
  }

  async storeDocument(
    tenantId: string,
    siteId: string,
    document: unknown,
    stage: "live" | "preview",
    source: string,
    now: number,
  ): Promise<number> {
    const key = siteKey(tenantId, siteId);
    const held = this.documents.get(key) ?? [];
    const version = held.reduce((max, d) => Math.max(max, d.version), 0) + 1;
    // Everything is decided (and refused) before anything is written.
    const lists = listsOf(document);
    const known = this.lists.get(key) ?? new Map<string, string>();
    const named =
      lists === null
        ? { document, fresh: [] }
        : assignListIds(
            document,
            lists,
            known,
            new Set(givenListIds(lists, known).filter((id) => this.listIds.has(id))),
          );
    const keyed = takeSecrets(named.document, this.secretsOf(key));
    if (repeats(named.fresh.map((f) => f.slug))) throw new UniqueViolation("newsletter_lists_pkey");
    if (repeats(named.fresh.map((f) => f.id))) throw new UniqueViolation("newsletter_lists_id_idx");
    if (repeats(keyed.fresh.map((k) => k.keyId))) throw new UniqueViolation("content_keys_pkey");
    const stored = asJsonb(keyed.document);
    for (const list of named.fresh) {
      known.set(list.slug, list.id);
      this.listIds.add(list.id);
    }
    if (named.fresh.length > 0) this.lists.set(key, known);
    const write = ++this.writes;
    const createdAt = new Date(this.now());
    for (const k of keyed.fresh) {
      const secret = this.sealed.seal(k.secret);
      this.heldKeys(key).set(k.keyId, { keyId: k.keyId, secret, createdAt, rotatedAt: null, write });
    }
    held.push({ version, stage, createdAt: new Date(now), document: stored, source: withoutSecrets(source) });
    this.documents.set(key, held);
    const site = this.sites.get(key);
    if (site !== undefined && stage === "live") site.liveVersion = version;
    if (site !== undefined && stage === "preview") site.previewVersion = version;
    return version;
  }

  async listDocuments(tenantId: string, siteId: string, limit = DOCUMENT_HISTORY_LIMIT): Promise<DocumentVersion[]> {
    const key = siteKey(tenantId, siteId);
    const site = this.sites.get(key);
    if (site === undefined) return [];
    return [...(this.documents.get(key) ?? [])]
      .sort((a, b) => b.version - a.version)
      .slice(0, limit)
      .map((d) => historyLine(d, site));
  }

  async loadDocument(tenantId: string, siteId: string, version: number): Promise<StoredDocument | null> {
    const held = this.documents.get(siteKey(tenantId, siteId))?.find((d) => d.version === version);
    if (held === undefined) return null;
    const { stage, createdAt, document, source } = held;
    return { version, stage, createdAt: createdAt.toISOString(), document: copyRow(document), source };
  }

  async setLiveVersion(tenantId: string, siteId: string, version: number): Promise<boolean> {
    const key = siteKey(tenantId, siteId);
    if (!this.documents.get(key)?.some((d) => d.version === version)) return false;
    const site = this.sites.get(key);
    if (site !== undefined) {
      site.liveVersion = version;
      if (site.previewVersion === version) site.previewVersion = null;
    }
    return true;
  }

  async loadSites(filter?: { tenantId: string; siteId: string }): Promise<SiteWithDocuments[]> {
    const rows = [...this.sites.values()].filter(
      (s) => filter === undefined || (s.tenantId === filter.tenantId && s.id === filter.siteId),
    );
    return rows.map((r) => {
      const key = siteKey(r.tenantId, r.id);
      const docOf = (v: number | null) =>
        v === null ? null : copyRow(this.documents.get(key)?.find((d) => d.version === v)?.document ?? null);
      const contentSecrets = this.secretsOf(key);
      return {
        ...copyRow(r),
        live: docOf(r.liveVersion),
        preview: docOf(r.previewVersion),
        contentSecrets,
        contentKeyStamp: contentKeyStamp(contentSecrets),
      };
    });
  }

  /** A site's keys' secrets, opened, by key id. */
  private secretsOf(key: string): Map<string, string> {
    return new Map([...(this.keys.get(key) ?? [])].map(([id, k]) => [id, this.sealed.open(k.secret)]));
  }

  private heldKeys(key: string): Map<string, HeldKey> {
    let keys = this.keys.get(key);
    if (keys === undefined) {
      keys = new Map();
      this.keys.set(key, keys);
    }
    return keys;
  }
}

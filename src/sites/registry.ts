import { type CompiledSite, compileSite } from "../core/compile";
import { validateSiteDocument } from "../core/document";
import type { Logger } from "../logger";
import { withSecrets } from "./content-keys";
import type { SiteStore, SiteWithDocuments, TenantIdentityProvider, TenantRow } from "./store";

/** A site as the hot path sees it: compiled documents, swapped whole on change. */
export interface SiteState {
  readonly tenantId: string;
  readonly id: string;
  readonly disabled: boolean;
  readonly liveVersion: number | null;
  readonly previewVersion: number | null;
  readonly live: CompiledSite | null;
  readonly preview: CompiledSite | null;
  /** Which content-key secrets the documents were compiled with (ids and fingerprints). */
  readonly contentKeyStamp: string;
}

/**
 * In-memory tenants, host names and compiled sites. Loaded whole at start; one tenant or
 * site is reloaded when the change feed says it changed, and its entry is replaced in one
 * assignment, so a request sees either the old or the new site, never a mix.
 */
export class SiteRegistry {
  private hosts = new Map<string, string>();
  private tenantIds = new Set<string>();
  private defaultTenant: string | null = null;
  private identityProviders = new Map<string, TenantIdentityProvider>();
  private publicUrls = new Map<string, string>();
  /** Sites by tenant, then by id (two lookups of the strings as sent, no key joined per request). */
  private readonly sites = new Map<string, Map<string, SiteState>>();

  constructor(
    private readonly store: SiteStore,
    private readonly logger: Logger,
  ) {}

  async loadAll(): Promise<void> {
    await this.store.sealContentKeys();
    this.setTenants(await this.store.listTenants());
    for (const row of await this.store.loadSites()) this.install(row);
  }

  async reloadTenants(): Promise<void> {
    this.setTenants(await this.store.listTenants());
  }

  async reloadSite(tenantId: string, siteId: string): Promise<void> {
    const [row] = await this.store.loadSites({ tenantId, siteId });
    if (row) this.install(row);
    else this.sites.get(tenantId)?.delete(siteId);
  }

  /** Whether any tenant is bound to a host name (if none, the default tenant answers every host). */
  hasHostNames(): boolean {
    return this.hosts.size > 0;
  }

  /** The tenant answering a Host header (port ignored); the default tenant answers the rest. */
  tenantForHost(host: string | null): string | null {
    if (host) {
      const colon = host.lastIndexOf(":");
      const name = (colon > 0 && !host.endsWith("]") ? host.slice(0, colon) : host).toLowerCase();
      const tenant = this.hosts.get(name);
      if (tenant !== undefined) return tenant;
    }
    return this.defaultTenant;
  }

  /** The origin the tenant's mailed links are built on, or null when none is configured. */
  publicUrl(tenantId: string): string | null {
    return this.publicUrls.get(tenantId) ?? null;
  }

  /** Whether the tenant has any host name bound to it. */
  hasHostsOf(tenantId: string): boolean {
    for (const owner of this.hosts.values()) if (owner === tenantId) return true;
    return false;
  }

  /** Whether a host name (no port, any case) is one of the tenant's configured host names. */
  isHostOf(tenantId: string, hostname: string): boolean {
    return this.hosts.get(hostname.toLowerCase()) === tenantId;
  }

  /** The tenant's upstream identity provider, or null when none is connected. */
  identityProvider(tenantId: string): TenantIdentityProvider | null {
    return this.identityProviders.get(tenantId) ?? null;
  }

  hasTenant(id: string): boolean {
    return this.tenantIds.has(id);
  }

  site(tenantId: string, siteId: string): SiteState | undefined {
    return this.sites.get(tenantId)?.get(siteId);
  }

  /** Sites of a tenant that are enabled and deployed. */
  sitesOf(tenantId: string): SiteState[] {
    return [...(this.sites.get(tenantId)?.values() ?? [])];
  }

  private setTenants(rows: TenantRow[]): void {
    const hosts = new Map<string, string>();
    for (const t of rows) for (const h of t.hosts) hosts.set(h.toLowerCase(), t.id);
    this.hosts = hosts;
    this.tenantIds = new Set(rows.map((t) => t.id));
    this.defaultTenant = rows.find((t) => t.isDefault)?.id ?? null;
    this.identityProviders = new Map(rows.flatMap((t) => (t.identityProvider ? [[t.id, t.identityProvider]] : [])));
    this.publicUrls = new Map(rows.flatMap((t) => (t.publicUrl ? [[t.id, t.publicUrl]] : [])));
  }

  private install(row: SiteWithDocuments): void {
    const found = this.site(row.tenantId, row.id);
    // A rotated (or added) key's secret changes no version: compile again with it.
    const previous = found?.contentKeyStamp === row.contentKeyStamp ? found : undefined;
    const state: SiteState = {
      tenantId: row.tenantId,
      id: row.id,
      disabled: row.disabled,
      liveVersion: row.liveVersion,
      previewVersion: row.previewVersion,
      live: previous && previous.liveVersion === row.liveVersion ? previous.live : this.compile(row, row.live, "live"),
      preview:
        previous && previous.previewVersion === row.previewVersion
          ? previous.preview
          : this.compile(row, row.preview, "preview"),
      contentKeyStamp: row.contentKeyStamp,
    };
    let sites = this.sites.get(row.tenantId);
    if (sites === undefined) {
      sites = new Map();
      this.sites.set(row.tenantId, sites);
    }
    sites.set(row.id, state);
  }

  private compile(row: SiteWithDocuments, document: unknown, stage: string): CompiledSite | null {
    if (document === null) return null;
    const checked = validateSiteDocument(withSecrets(document, row.contentSecrets));
    if (!checked.ok) {
      // Deploy validates first, so this means a stored document no longer fits the code.
      this.logger.error("stored site document does not validate; site not served", {
        tenant: row.tenantId,
        site: row.id,
        stage,
        errors: checked.errors.slice(0, 5),
      });
      return null;
    }
    return compileSite(checked.document);
  }
}

import type { ServiceConfigStore } from "./service-config";
import type { ServiceName } from "./service-config-model";

/**
 * Tenants' outside-service settings in memory (sealed text, one per tenant and service), for tests
 * that need no Postgres; held to the drizzle store by one contract suite. It does not know which
 * tenants exist (Postgres refuses a tenant it has no row of; the callers only ever name one).
 */
export class MemoryServiceConfigStore implements ServiceConfigStore {
  private readonly rows = new Map<string, Map<ServiceName, string>>();

  async get(tenantId: string, service: ServiceName): Promise<string | null> {
    return this.rows.get(tenantId)?.get(service) ?? null;
  }

  async put(tenantId: string, service: ServiceName, sealed: string): Promise<void> {
    const held = this.rows.get(tenantId) ?? new Map<ServiceName, string>();
    held.set(service, sealed);
    this.rows.set(tenantId, held);
  }

  async delete(tenantId: string, service: ServiceName): Promise<boolean> {
    return this.rows.get(tenantId)?.delete(service) ?? false;
  }

  async list(tenantId: string): Promise<ServiceName[]> {
    return [...(this.rows.get(tenantId)?.keys() ?? [])];
  }
}

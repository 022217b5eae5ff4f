import { Value } from "@sinclair/typebox/value";
import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { tenantServices } from "../../db/schema";
import { validationError } from "../http/error-envelope";
import { AppError } from "../infra/errors";
import type { SealedText } from "../mail/sealed-text";
import { isServiceName, SERVICE_SCHEMAS, type ServiceConfig, type ServiceName } from "./service-config-model";

/** Where the per-tenant outside-service settings live: sealed JSON, one row per (tenant, service). */
export interface ServiceConfigStore {
  get(tenantId: string, service: ServiceName): Promise<string | null>;
  put(tenantId: string, service: ServiceName, sealed: string): Promise<void>;
  delete(tenantId: string, service: ServiceName): Promise<boolean>;
  list(tenantId: string): Promise<ServiceName[]>;
}

export class DrizzleServiceConfigStore implements ServiceConfigStore {
  constructor(private readonly db: Db) {}

  async get(tenantId: string, service: ServiceName): Promise<string | null> {
    const rows = await this.db
      .select({ config: tenantServices.config })
      .from(tenantServices)
      .where(and(eq(tenantServices.tenantId, tenantId), eq(tenantServices.service, service)));
    return rows[0]?.config ?? null;
  }

  async put(tenantId: string, service: ServiceName, sealed: string): Promise<void> {
    await this.db
      .insert(tenantServices)
      .values({ tenantId, service, config: sealed })
      .onConflictDoUpdate({
        target: [tenantServices.tenantId, tenantServices.service],
        set: { config: sealed, updatedAt: new Date() },
      });
  }

  async delete(tenantId: string, service: ServiceName): Promise<boolean> {
    const rows = await this.db
      .delete(tenantServices)
      .where(and(eq(tenantServices.tenantId, tenantId), eq(tenantServices.service, service)))
      .returning({ service: tenantServices.service });
    return rows.length > 0;
  }

  async list(tenantId: string): Promise<ServiceName[]> {
    const rows = await this.db
      .select({ service: tenantServices.service })
      .from(tenantServices)
      .where(eq(tenantServices.tenantId, tenantId));
    return rows.map((r) => r.service).filter(isServiceName);
  }
}

/** The settings a service call needs, or why there are none. */
export type ResolvedService<S extends ServiceName> =
  | { readonly configured: true; readonly config: ServiceConfig<S> }
  | { readonly configured: false; readonly reason: string };

/**
 * Reads, opens and resolves a tenant's outside-service settings. Read per use (no cache): the
 * callers are background jobs and cache misses, never the decide hot path, and a read per use
 * keeps every process coherent without a change topic.
 */
export class ServiceConfigs {
  constructor(
    private readonly store: ServiceConfigStore,
    private readonly sealer: SealedText,
    private readonly env: Readonly<Record<string, string | undefined>>,
  ) {}

  /** Validates and stores a service's settings (422 with the failing paths; nothing stored then). */
  async set(tenantId: string, service: string, config: unknown): Promise<{ service: ServiceName; set: string[] }> {
    const name = serviceNameOf(service);
    const schema = SERVICE_SCHEMAS[name];
    if (!Value.Check(schema, config)) throw validationError(Value.Errors(schema, config), schema);
    for (const [member, value] of Object.entries(config as Record<string, string>)) {
      if (value.startsWith("env:")) {
        if (!/^env:[A-Z_][A-Z0-9_]{0,127}$/.test(value))
          throw validationError([{ path: `/${member}`, message: "env reference must be env:NAME (A-Z, 0-9, _)" }]);
      } else if (URL_MEMBERS.has(member) && !isHttpUrl(value)) {
        throw validationError([{ path: `/${member}`, message: "must be an http(s) URL" }]);
      }
    }
    await this.store.put(tenantId, name, this.sealer.seal(JSON.stringify(config)));
    return { service: name, set: Object.keys(config as object).sort() };
  }

  async clear(tenantId: string, service: string): Promise<boolean> {
    return this.store.delete(tenantId, serviceNameOf(service));
  }

  /** Which services a tenant has configured and which members each sets (values never answered). */
  async describe(tenantId: string): Promise<{ service: ServiceName; set: string[] }[]> {
    const names = await this.store.list(tenantId);
    const out: { service: ServiceName; set: string[] }[] = [];
    for (const service of names.sort()) {
      const sealed = await this.store.get(tenantId, service);
      if (sealed === null) continue;
      out.push({ service, set: Object.keys(JSON.parse(this.sealer.open(sealed)) as object).sort() });
    }
    return out;
  }

  /** The settings with `env:` references resolved; not configured when absent or a reference is unset. */
  async resolve<S extends ServiceName>(tenantId: string, service: S): Promise<ResolvedService<S>> {
    const sealed = await this.store.get(tenantId, service);
    if (sealed === null) return { configured: false, reason: `${service} is not configured for this tenant` };
    const stored = JSON.parse(this.sealer.open(sealed)) as Record<string, string>;
    const resolved: Record<string, string> = {};
    for (const [member, value] of Object.entries(stored)) {
      if (!value.startsWith("env:")) {
        resolved[member] = value;
        continue;
      }
      const fromEnv = this.env[value.slice(4)];
      if (!fromEnv) return { configured: false, reason: `${service}.${member} names an unset variable` };
      resolved[member] = fromEnv;
    }
    return { configured: true, config: resolved as ServiceConfig<S> };
  }
}

/** Members that hold a base URL (the schemas' `baseUrl`): checked with URL as well as the pattern. */
const URL_MEMBERS = new Set(["endpoint", "baseUri", "apiBase", "url"]);

function serviceNameOf(service: string): ServiceName {
  if (!isServiceName(service)) throw new AppError("not_found", `Unknown service "${service.slice(0, 64)}".`);
  return service;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && !url.username && !url.password;
  } catch {
    return false;
  }
}

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSite, createTenant, deploySite } from "./admin/service";
import type { Deps } from "./deps";

const DEMO_TENANT = "default";
export const DEMO_SITE = "demo";
export const demoDocumentPath = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "docs",
  "examples",
  "demo-site.json",
);

/**
 * First run on an empty store: a clearly labelled demo (the default tenant answering every
 * host, site `demo` deployed from the example document, one key). Returns the key value so
 * the caller can print it once; null when the store was not empty.
 */
export async function seedDemo(deps: Deps, onSeeding?: () => void): Promise<{ key: string; site: string } | null> {
  const existing = await deps.siteStore.listTenants();
  if (existing.length > 0) return null;
  onSeeding?.();
  await createTenant(deps, { id: DEMO_TENANT, default: true });
  await createSite(deps, DEMO_TENANT, DEMO_SITE);
  const source = readFileSync(demoDocumentPath, "utf8");
  await deploySite(deps, DEMO_TENANT, DEMO_SITE, JSON.parse(source), false, source);
  const issued = await deps.keys.issue(DEMO_TENANT, DEMO_SITE, { name: "demo key (created on first run)" }, deps.now());
  return { key: issued.key, site: DEMO_SITE };
}

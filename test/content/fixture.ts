import { afterAll, beforeAll } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { type FakeStoryblok, startFakeStoryblok } from "../helpers/fake-storyblok";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

export const CMS_TOKEN = "storyblok-public-token";

/** A site "news" with a key, the tenant's Storyblok pointed at a fresh fake CMS. */
export async function contentSite(h: Harness) {
  const cms = startFakeStoryblok(CMS_TOKEN);
  const { key } = await seedSite(h, "news", basicDocument());
  const put = await h.admin("PUT", "/admin/tenants/default/services/storyblok", {
    token: CMS_TOKEN,
    endpoint: cms.endpoint,
  });
  if (put.status !== 200) throw new Error(`storyblok settings answered ${put.status}`);
  return { cms, key };
}

/** The world of a content describe block, filled by its beforeAll: read its members inside tests only. */
export interface ContentWorld {
  readonly db: Awaited<ReturnType<typeof freshDatabase>>;
  /** The app; a test restarting it puts the new one here, and that one is stopped after the block. */
  h: Harness;
  readonly cms: FakeStoryblok;
  readonly key: string;
}

/**
 * An app over a fresh database of `kind` (`config`) with a content site (`contentSite`), started
 * before the describe block's tests and stopped after them (call it inside `describe`).
 */
export function contentWorld(kind: StoreKind, config: Record<string, string> = {}): ContentWorld {
  const world = {} as { -readonly [K in keyof ContentWorld]: ContentWorld[K] };
  beforeAll(async () => {
    world.db = await freshDatabase(kind);
    world.h = await startHarness(world.db, { config });
    ({ cms: world.cms, key: world.key } = await contentSite(world.h));
  }, 60_000);
  afterAll(async () => {
    world.cms.stop();
    await world.h.stop();
    await world.db.drop();
  }, 60_000);
  return world;
}

/** POST /v1/content/sync under a key, selecting site "news" unless `headers` say otherwise. */
export function sync(h: Harness, key: string, body: unknown, headers: Record<string, string> = {}) {
  return h.request("POST", "/v1/content/sync", {
    headers: { "x-svc-site-id": "news", "x-api-key": key, ...headers },
    body,
  });
}

/**
 * Runs what is due now. Twice: a pass the queue's own timer began before the test moved the
 * clock is awaited, then one that sees the clock as it is.
 */
export async function drain(h: Harness): Promise<void> {
  await h.deps.jobs.runDue();
  await h.deps.jobs.runDue();
}

/** The item as the admin API answers it, or the status when it has none. */
export async function itemOf(h: Harness, id: string, site = "news") {
  const res = await h.admin("GET", `/admin/tenants/default/sites/${site}/content/${id}`);
  if (res.status !== 200) return res.status;
  return ((await res.json()) as { item: Record<string, unknown> }).item;
}

export async function statsOf(h: Harness, site = "news") {
  const res = await h.admin("GET", `/admin/tenants/default/sites/${site}/content`);
  return (await res.json()) as {
    items: number;
    deleted: number;
    queue: { queued: number; running: number; dead: number; depth: number; oldest: string | null };
  };
}

import { afterAll, beforeAll, beforeEach } from "bun:test";
import type { ContentItem } from "../../src/content/mapping";
import type { MailTransport } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { startFakeRecombee } from "../helpers/fake-recombee";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

export const DATABASE_ID = "news-db";
export const ENGINE_TOKEN = "recombee-private-token-0123456789";
export const ORIGIN = "https://news.example";

export function item(id: string, overrides: Partial<ContentItem> = {}): ContentItem {
  return {
    id,
    type: "story",
    headline: `Headline ${id}`,
    description: `Teaser ${id}`,
    image: `https://img.example/${id}.jpg`,
    url: `https://news.example/story-${id}`,
    publishedAt: "2026-11-20T08:00:00.000Z",
    sections: ["world"],
    tags: [],
    authors: [],
    contentType: "article",
    language: "en",
    deleted: false,
    cmsVersion: 1,
    readAt: "2026-11-21T12:00:00.000Z",
    ...overrides,
  };
}

/**
 * Sites "news" (svc_only) and "wire" (external_only) with keys, the tenant's engine pointed at
 * a fresh fake, and content items: news holds 1-8 and a deleted 9; item 10 is wire's.
 */
export async function recommendationWorld(h: Harness) {
  const engine = startFakeRecombee(DATABASE_ID, ENGINE_TOKEN);
  const { key, keyId } = await seedSite(h, "news", basicDocument());
  const { key: wireKey } = await seedSite(h, "wire", basicDocument({ identity: { mode: "external_only" } }));
  const put = await h.admin("PUT", "/admin/tenants/default/services/recombee", {
    databaseId: DATABASE_ID,
    token: ENGINE_TOKEN,
    baseUri: engine.baseUri,
  });
  if (put.status !== 200) throw new Error(`recombee settings answered ${put.status}`);
  const store = h.deps.contentStore;
  for (const id of ["1", "2", "3", "4", "5", "6", "7", "8"]) await store.put("default", "news", item(id));
  await store.put("default", "news", item("9"));
  await store.markDeleted("default", "news", "9", 2, Date.now());
  await store.put("default", "wire", item("10"));
  engine.state.catalog = ["3", "9", "1", "10", "2", "4", "5", "6", "7", "8"];
  engine.state.knownItems = new Set(["1", "2", "3"]);
  return { engine, key, keyId, wireKey };
}

/**
 * A harness (recommendation timeout 300 ms) over a fresh database with recommendationWorld in it,
 * made before the describe block's tests and stopped after them, the engine answering "ok" at the
 * start of each test (call it inside `describe`; read its members inside tests only).
 */
export function recommendationSuiteWorld(kind: StoreKind, mailTransport?: MailTransport) {
  const world = {} as { h: Harness; db: Awaited<ReturnType<typeof freshDatabase>> } & Awaited<
    ReturnType<typeof recommendationWorld>
  >;
  beforeAll(async () => {
    world.db = await freshDatabase(kind);
    world.h = await startHarness(world.db, { config: { SVC_RECOMMENDATION_TIMEOUT_MS: "300" }, mailTransport });
    Object.assign(world, await recommendationWorld(world.h));
  }, 60_000);
  afterAll(async () => {
    world.engine.stop();
    await world.h.stop();
    await world.db.drop();
  }, 60_000);
  beforeEach(() => {
    world.engine.state.mode = "ok";
  });
  return world as Readonly<typeof world>;
}

export type Reply = {
  recommId: string | null;
  items: {
    id: string;
    headline: string;
    description: string;
    image: string;
    url: string;
    publishedAt: string | null;
  }[];
};

export function keyed(h: Harness, key: string, query: string, headers: Record<string, string> = {}) {
  return h.request("GET", `/v1/recommendations${query}`, { headers: { "x-api-key": key, ...headers } });
}

export function browser(h: Harness, query: string, headers: Record<string, string> = {}, site = "news") {
  return h.request("GET", `/svc/v1/recommendations${query}`, {
    headers: { "x-svc-site-id": site, origin: ORIGIN, ...headers },
  });
}

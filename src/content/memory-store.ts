import type { ContentItem } from "./mapping";
import type { ContentStore } from "./store";

const iso = (value: string | number): string => new Date(value).toISOString();

/** A site's content items and authors in memory; held to the drizzle store by one contract suite. */
export class MemoryContentStore implements ContentStore {
  private readonly items = new Map<string, ContentItem>();
  private readonly authors = new Map<string, { name: string | null; cmsVersion: number }>();

  private static key(tenantId: string, siteId: string, id: string): string {
    return JSON.stringify([tenantId, siteId, id]);
  }

  /** Written only when no newer read is stored, as the drizzle store's `setWhere`. */
  private written(key: string, item: ContentItem): boolean {
    const held = this.items.get(key);
    if (held !== undefined && held.cmsVersion > item.cmsVersion) return false;
    this.items.set(key, structuredClone(item));
    return true;
  }

  async put(tenantId: string, siteId: string, item: ContentItem): Promise<boolean> {
    return this.written(MemoryContentStore.key(tenantId, siteId, item.id), {
      ...item,
      publishedAt: item.publishedAt === null ? null : iso(item.publishedAt),
      readAt: iso(item.readAt),
      deleted: false,
    });
  }

  async markDeleted(tenantId: string, siteId: string, id: string, version: number, readAt: number): Promise<boolean> {
    const key = MemoryContentStore.key(tenantId, siteId, id);
    const held = this.items.get(key) ?? {
      id,
      type: "story",
      headline: null,
      description: null,
      image: null,
      url: null,
      publishedAt: null,
      sections: [],
      tags: [],
      authors: [],
      contentType: null,
      language: null,
      deleted: true,
      cmsVersion: version,
      readAt: iso(readAt),
    };
    return this.written(key, { ...held, deleted: true, cmsVersion: version, readAt: iso(readAt) });
  }

  async putAuthor(
    tenantId: string,
    siteId: string,
    id: string,
    name: string | null,
    version: number,
  ): Promise<boolean> {
    const key = MemoryContentStore.key(tenantId, siteId, id);
    const held = this.authors.get(key);
    if (held !== undefined && held.cmsVersion > version) return false;
    this.authors.set(key, { name, cmsVersion: version });
    const prefix = JSON.stringify([tenantId, siteId]).slice(0, -1);
    for (const [itemKey, item] of this.items) {
      if (!itemKey.startsWith(`${prefix},`) || !item.authors.some((a) => a.id === id)) continue;
      this.items.set(itemKey, { ...item, authors: item.authors.map((a) => (a.id === id ? { ...a, name } : a)) });
    }
    return true;
  }

  async authorNames(tenantId: string, siteId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
    const out = new Map<string, string | null>();
    for (const id of ids) {
      const held = this.authors.get(MemoryContentStore.key(tenantId, siteId, id));
      if (held !== undefined) out.set(id, held.name);
    }
    return out;
  }

  async get(tenantId: string, siteId: string, id: string): Promise<ContentItem | null> {
    const item = this.items.get(MemoryContentStore.key(tenantId, siteId, id));
    return item === undefined ? null : structuredClone(item);
  }

  async liveItems(tenantId: string, siteId: string, ids: readonly string[]): Promise<ContentItem[]> {
    const out: ContentItem[] = [];
    for (const id of new Set(ids)) {
      const item = this.items.get(MemoryContentStore.key(tenantId, siteId, id));
      if (item !== undefined && !item.deleted) out.push(structuredClone(item));
    }
    return out;
  }

  async counts(tenantId: string, siteId: string): Promise<{ items: number; deleted: number }> {
    const prefix = `${JSON.stringify([tenantId, siteId]).slice(0, -1)},`;
    let items = 0;
    let deleted = 0;
    for (const [key, item] of this.items) {
      if (!key.startsWith(prefix)) continue;
      if (item.deleted) deleted++;
      else items++;
    }
    return { items, deleted };
  }
}

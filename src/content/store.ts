import { and, count, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { contentAuthors, contentItems } from "../../db/schema";
import type { ContentItem } from "./mapping";

type Row = typeof contentItems.$inferSelect;

/** A site's content items and authors as last read from the CMS. */
export interface ContentStore {
  /** Writes the item unless the stored one is newer (`cmsVersion`); true when written. */
  put(tenantId: string, siteId: string, item: ContentItem): Promise<boolean>;
  /** Marks the item deleted (a 404 read at `version`) unless a newer read is stored. */
  markDeleted(tenantId: string, siteId: string, id: string, version: number, readAt: number): Promise<boolean>;
  /** Stores an author's name and renames it on the site's items, unless a newer read is stored. */
  putAuthor(tenantId: string, siteId: string, id: string, name: string | null, version: number): Promise<boolean>;
  authorNames(tenantId: string, siteId: string, ids: readonly string[]): Promise<Map<string, string | null>>;
  get(tenantId: string, siteId: string, id: string): Promise<ContentItem | null>;
  /** The site's items with these ids that are not deleted. */
  liveItems(tenantId: string, siteId: string, ids: readonly string[]): Promise<ContentItem[]>;
  counts(tenantId: string, siteId: string): Promise<{ items: number; deleted: number }>;
}

export class DrizzleContentStore implements ContentStore {
  constructor(private readonly db: Db) {}

  async put(tenantId: string, siteId: string, item: ContentItem): Promise<boolean> {
    const values = {
      tenantId,
      siteId,
      id: item.id,
      type: item.type,
      headline: item.headline,
      description: item.description,
      image: item.image,
      url: item.url,
      publishedAt: item.publishedAt === null ? null : new Date(item.publishedAt),
      sections: item.sections,
      tags: item.tags,
      authors: item.authors,
      contentType: item.contentType,
      language: item.language,
      deleted: false,
      cmsVersion: item.cmsVersion,
      readAt: new Date(item.readAt),
    };
    const { tenantId: _t, siteId: _s, id: _i, ...set } = values;
    const rows = await this.db
      .insert(contentItems)
      .values(values)
      .onConflictDoUpdate({
        target: [contentItems.tenantId, contentItems.siteId, contentItems.id],
        set,
        setWhere: sql`${contentItems.cmsVersion} <= excluded.cms_version`,
      })
      .returning({ id: contentItems.id });
    return rows.length > 0;
  }

  async markDeleted(tenantId: string, siteId: string, id: string, version: number, readAt: number): Promise<boolean> {
    const rows = await this.db
      .insert(contentItems)
      .values({ tenantId, siteId, id, deleted: true, cmsVersion: version, readAt: new Date(readAt) })
      .onConflictDoUpdate({
        target: [contentItems.tenantId, contentItems.siteId, contentItems.id],
        set: { deleted: true, cmsVersion: version, readAt: new Date(readAt) },
        setWhere: sql`${contentItems.cmsVersion} <= excluded.cms_version`,
      })
      .returning({ id: contentItems.id });
    return rows.length > 0;
  }

  async putAuthor(
    tenantId: string,
    siteId: string,
    id: string,
    name: string | null,
    version: number,
  ): Promise<boolean> {
    const written = await this.db
      .insert(contentAuthors)
      .values({ tenantId, siteId, id, name, cmsVersion: version })
      .onConflictDoUpdate({
        target: [contentAuthors.tenantId, contentAuthors.siteId, contentAuthors.id],
        set: { name, cmsVersion: version },
        setWhere: sql`${contentAuthors.cmsVersion} <= excluded.cms_version`,
      })
      .returning({ id: contentAuthors.id });
    if (written.length === 0) return false;
    const named = sql`coalesce(to_jsonb(${name}::text), 'null'::jsonb)`;
    await this.db
      .update(contentItems)
      .set({
        authors: sql`(select jsonb_agg(case when x.a->>'id' = ${id}::text then jsonb_set(x.a, '{name}', ${named}) else x.a end order by x.n)
          from jsonb_array_elements(${contentItems.authors}) with ordinality as x(a, n))`,
      })
      .where(
        and(
          eq(contentItems.tenantId, tenantId),
          eq(contentItems.siteId, siteId),
          sql`${contentItems.authors} @> jsonb_build_array(jsonb_build_object('id', ${id}::text))`,
        ),
      );
    return true;
  }

  async authorNames(tenantId: string, siteId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .select({ id: contentAuthors.id, name: contentAuthors.name })
      .from(contentAuthors)
      .where(
        and(
          eq(contentAuthors.tenantId, tenantId),
          eq(contentAuthors.siteId, siteId),
          inArray(contentAuthors.id, [...ids]),
        ),
      );
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  async get(tenantId: string, siteId: string, id: string): Promise<ContentItem | null> {
    const [row] = await this.db
      .select()
      .from(contentItems)
      .where(and(eq(contentItems.tenantId, tenantId), eq(contentItems.siteId, siteId), eq(contentItems.id, id)));
    return row === undefined ? null : itemOf(row);
  }

  async liveItems(tenantId: string, siteId: string, ids: readonly string[]): Promise<ContentItem[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .select()
      .from(contentItems)
      .where(
        and(
          eq(contentItems.tenantId, tenantId),
          eq(contentItems.siteId, siteId),
          inArray(contentItems.id, [...ids]),
          eq(contentItems.deleted, false),
        ),
      );
    return rows.map(itemOf);
  }

  async counts(tenantId: string, siteId: string): Promise<{ items: number; deleted: number }> {
    const rows = await this.db
      .select({ deleted: contentItems.deleted, n: count() })
      .from(contentItems)
      .where(and(eq(contentItems.tenantId, tenantId), eq(contentItems.siteId, siteId)))
      .groupBy(contentItems.deleted);
    const of = (deleted: boolean) => Number(rows.find((r) => r.deleted === deleted)?.n ?? 0);
    return { items: of(false), deleted: of(true) };
  }
}

function itemOf(row: Row): ContentItem {
  return {
    id: row.id,
    type: row.type,
    headline: row.headline,
    description: row.description,
    image: row.image,
    url: row.url,
    publishedAt: row.publishedAt === null ? null : new Date(row.publishedAt).toISOString(),
    sections: row.sections,
    tags: row.tags,
    authors: row.authors,
    contentType: row.contentType,
    language: row.language,
    deleted: row.deleted,
    cmsVersion: Number(row.cmsVersion),
    readAt: new Date(row.readAt).toISOString(),
  };
}

import { expect, it } from "bun:test";
import type { ContentItem } from "../../src/content/mapping";
import { MemoryContentStore } from "../../src/content/memory-store";
import { type ContentStore, DrizzleContentStore } from "../../src/content/store";
import { storeContract } from "../helpers/store-contract";

const story = (id: string, cmsVersion: number, over: Partial<ContentItem> = {}): ContentItem => ({
  id,
  type: "story",
  headline: `Headline ${id} v${cmsVersion}`,
  description: null,
  image: "https://img.example/1.jpg",
  url: `https://news.example/${id}`,
  publishedAt: "2026-11-20T08:00:00Z",
  sections: ["politics"],
  tags: ["election", "vote"],
  authors: [
    { id: "a1", name: "Ann" },
    { id: "a2", name: null },
  ],
  contentType: "article",
  language: "en",
  deleted: false,
  cmsVersion,
  readAt: "2026-11-26T12:00:00.000Z",
  ...over,
});

storeContract<ContentStore>(
  "the content store",
  (_kind, db) => (db === null ? new MemoryContentStore() : new DrizzleContentStore(db)),
  (store) => {
    it("writes an item unless a newer read is stored, and reads it back as written", async () => {
      expect(await store().put("t1", "news", story("s1", 100))).toBe(true);
      expect(await store().get("t1", "news", "s1")).toEqual({
        ...story("s1", 100),
        publishedAt: "2026-11-20T08:00:00.000Z",
      });
      expect(await store().put("t1", "news", story("s1", 99))).toBe(false);
      expect(await store().put("t1", "news", story("s1", 100, { headline: "same version" }))).toBe(true);
      expect((await store().get("t1", "news", "s1"))?.headline).toBe("same version");
      expect(await store().put("t1", "news", story("s1", 101, { deleted: true, publishedAt: null }))).toBe(true);
      expect(await store().get("t1", "news", "s1")).toMatchObject({
        cmsVersion: 101,
        deleted: false,
        publishedAt: null,
      });
      expect(await store().get("t1", "sport", "s1")).toBeNull();
      expect(await store().get("t2", "news", "s1")).toBeNull();
    });

    it("marks an item deleted unless a newer read is stored, even one never read", async () => {
      await store().put("t1", "news", story("d1", 100));
      expect(await store().markDeleted("t1", "news", "d1", 99, Date.UTC(2026, 10, 26))).toBe(false);
      expect(await store().markDeleted("t1", "news", "d1", 150, Date.UTC(2026, 10, 26))).toBe(true);
      expect(await store().get("t1", "news", "d1")).toMatchObject({
        deleted: true,
        cmsVersion: 150,
        headline: "Headline d1 v100",
        readAt: "2026-11-26T00:00:00.000Z",
      });
      expect(await store().markDeleted("t1", "news", "never", 5, Date.UTC(2026, 10, 26))).toBe(true);
      expect(await store().get("t1", "news", "never")).toEqual({
        id: "never",
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
        cmsVersion: 5,
        readAt: "2026-11-26T00:00:00.000Z",
      });
      expect(await store().put("t1", "news", story("d1", 200))).toBe(true);
      expect((await store().get("t1", "news", "d1"))?.deleted).toBe(false);
    });

    it("lists live items by id and counts items and deleted ones per site", async () => {
      await store().put("t3", "news", story("l1", 1));
      await store().put("t3", "news", story("l2", 1));
      await store().put("t3", "sport", story("l3", 1));
      await store().markDeleted("t3", "news", "l4", 1, Date.UTC(2026, 10, 26));
      const live = await store().liveItems("t3", "news", ["l1", "l2", "l3", "l4", "l1"]);
      expect(live.map((i) => i.id).sort()).toEqual(["l1", "l2"]);
      expect(await store().liveItems("t3", "news", [])).toEqual([]);
      expect(await store().counts("t3", "news")).toEqual({ items: 2, deleted: 1 });
      expect(await store().counts("t3", "none")).toEqual({ items: 0, deleted: 0 });
    });

    it("stores an author's name unless newer, and renames it on the site's items in order", async () => {
      await store().put("t4", "news", story("r1", 1));
      await store().put("t4", "news", story("r2", 1, { authors: [{ id: "a3", name: "Cy" }] }));
      await store().put("t4", "sport", story("r3", 1));
      expect(await store().putAuthor("t4", "news", "a1", "Anne", 10)).toBe(true);
      expect(await store().putAuthor("t4", "news", "a1", "Old", 9)).toBe(false);
      expect((await store().get("t4", "news", "r1"))?.authors).toEqual([
        { id: "a1", name: "Anne" },
        { id: "a2", name: null },
      ]);
      expect((await store().get("t4", "news", "r2"))?.authors).toEqual([{ id: "a3", name: "Cy" }]);
      expect((await store().get("t4", "sport", "r3"))?.authors[0]).toEqual({ id: "a1", name: "Ann" });
      expect(await store().putAuthor("t4", "news", "a1", null, 11)).toBe(true);
      expect((await store().get("t4", "news", "r1"))?.authors[0]).toEqual({ id: "a1", name: null });
      expect(await store().authorNames("t4", "news", ["a1", "a9"])).toEqual(new Map([["a1", null]]));
      expect(await store().authorNames("t4", "news", [])).toEqual(new Map());
    });
  },
);

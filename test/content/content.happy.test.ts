import { beforeEach, describe, expect, it } from "bun:test";
import { run } from "../../src/cli/run";
import { storeKinds } from "../helpers/databases";
import { articleStory } from "../helpers/fake-storyblok";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { contentWorld, drain, itemOf, statsOf, sync } from "./fixture";

describe.each(storeKinds)("POST /v1/content/sync and the re-reads (%s store)", (kind) => {
  const w = contentWorld(kind, { SVC_CMS_TIMEOUT_MS: "300" });
  beforeEach(() => {
    w.cms.state.mode = "ok";
  });

  it("answers success once enqueued and reads the story after the debounce, storing every field", async () => {
    w.cms.stories.set("101", articleStory(101));
    const res = await sync(w.h, w.key, { events: [{ id: "101" }] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true });
    await drain(w.h);
    expect(w.cms.readsOf("101")).toBe(0);
    expect((await statsOf(w.h)).queue.depth).toBe(1);
    const metrics = await (
      await w.h.request("GET", "/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
    ).text();
    expect(metrics).toContain('svc_jobs{kind="content.reread",state="queued"} 1');
    expect(metrics).toContain('svc_jobs_oldest_age_seconds{kind="content.reread"} 0');

    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.readsOf("101")).toBe(1);
    expect(await itemOf(w.h, "101")).toEqual({
      id: "101",
      type: "story",
      headline: "Headline 101",
      description: "Teaser 101",
      image: "https://a.storyblok.com/f/1/101.jpg",
      url: "https://news.example/story-101",
      publishedAt: "2026-11-20T08:00:00.000Z",
      sections: ["world"],
      tags: ["politics", "europe"],
      authors: [{ id: "501", name: null }],
      contentType: "article",
      language: "en",
      deleted: false,
      cmsVersion: Date.parse("2026-11-21T09:00:00.000Z"),
      readAt: new Date(w.h.clock.now()).toISOString(),
    });
    expect((await statsOf(w.h)).queue.depth).toBe(0);
  });

  it("collapses notices of one id within the debounce window into one read", async () => {
    w.cms.stories.set("102", articleStory(102));
    await sync(w.h, w.key, { events: [{ id: "102" }, { id: "102", type: "story" }] });
    w.h.clock.advance(2_000);
    await sync(w.h, w.key, { events: [{ id: "102" }] });
    w.h.clock.advance(2_000);
    await sync(w.h, w.key, { events: [{ id: "102" }] });
    await drain(w.h);
    expect(w.cms.readsOf("102")).toBe(0);
    w.h.clock.advance(1_000);
    await drain(w.h);
    expect(w.cms.readsOf("102")).toBe(1);
    // A notice after the read is a new read.
    await sync(w.h, w.key, { events: [{ id: "102" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.readsOf("102")).toBe(2);
  });

  it("accepts other types and ignores them, and an empty batch", async () => {
    const before = w.cms.reads.length;
    for (const body of [
      { events: [] },
      {
        events: [
          { id: "x1", type: "asset" },
          { id: "x2", type: "folder" },
        ],
      },
    ]) {
      const res = await sync(w.h, w.key, body);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ success: true });
    }
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.reads.length).toBe(before);
  });

  it("names a story's authors from author re-reads, and an author's rename reaches their items", async () => {
    w.cms.stories.set("601", {
      id: 601,
      name: "Ada Writer",
      published_at: "2026-11-21T09:00:00Z",
      content: { component: "author" },
    });
    w.cms.stories.set("103", articleStory(103, { content: { authors: ["601", "602"] } }));
    await sync(w.h, w.key, { events: [{ id: "601", type: "author" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    await sync(w.h, w.key, { events: [{ id: "103" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(((await itemOf(w.h, "103")) as { authors: unknown }).authors).toEqual([
      { id: "601", name: "Ada Writer" },
      { id: "602", name: null },
    ]);

    w.cms.stories.set("601", {
      id: 601,
      name: "ada",
      published_at: "2026-11-21T10:00:00Z",
      content: { component: "author", name: "Ada Lovelace-Writer" },
    });
    w.cms.stories.set("602", { id: 602, name: "Bo Reporter", published_at: "2026-11-21T10:00:00Z" });
    await sync(w.h, w.key, {
      events: [
        { id: "601", type: "author" },
        { id: "602", type: "author" },
      ],
    });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(((await itemOf(w.h, "103")) as { authors: unknown }).authors).toEqual([
      { id: "601", name: "Ada Lovelace-Writer" },
      { id: "602", name: "Bo Reporter" },
    ]);
  });

  it("marks an item deleted when the CMS answers 404, and counts it", async () => {
    w.cms.stories.set("104", articleStory(104));
    await sync(w.h, w.key, { events: [{ id: "104" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    const before = await statsOf(w.h);
    w.cms.stories.delete("104");
    await sync(w.h, w.key, { events: [{ id: "104" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(await itemOf(w.h, "104")).toMatchObject({ id: "104", deleted: true, headline: "Headline 104" });
    const after = await statsOf(w.h);
    expect(after.items).toBe(before.items - 1);
    expect(after.deleted).toBe(before.deleted + 1);
  });

  it("never writes an older answer over a newer one", async () => {
    w.cms.stories.set(
      "105",
      articleStory(105, { published_at: "2026-11-21T11:00:00Z", content: { headline: "Newer" } }),
    );
    await sync(w.h, w.key, { events: [{ id: "105" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    // A CDN edge still holding the earlier publish answers the next read.
    w.cms.stories.set(
      "105",
      articleStory(105, { published_at: "2026-11-21T10:00:00Z", content: { headline: "Older" } }),
    );
    await sync(w.h, w.key, { events: [{ id: "105" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    expect(w.cms.readsOf("105")).toBe(2);
    expect(await itemOf(w.h, "105")).toMatchObject({ headline: "Newer" });
  });

  it("shows an item with svc content get, and the counts and queue with svc content stats", async () => {
    w.cms.stories.set("106", articleStory(106));
    await sync(w.h, w.key, { events: [{ id: "106" }] });
    w.h.clock.advance(5_000);
    await drain(w.h);
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => w.h.app.handle(r) });
    try {
      const out: string[] = [];
      const io = {
        env: { SVC_URL: `http://127.0.0.1:${server.port}`, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN },
        stdout: (t: string) => out.push(t),
        stderr: (t: string) => out.push(t),
      };
      expect(await run(["content", "get", "news", "106", "--json"], io)).toBe(0);
      expect(JSON.parse(out.join(""))).toMatchObject({ item: { id: "106", headline: "Headline 106" } });
      out.length = 0;
      expect(await run(["content", "stats", "news"], io)).toBe(0);
      expect(out.join("")).toMatch(/^items\t\d+\ndeleted\t\d+\nqueued\t0\ndead\t0\noldest\t-/);
      out.length = 0;
      expect(await run(["content", "get", "news", "no-such-id"], io)).not.toBe(0);
      expect(out.join("")).toContain("No such content item.");
    } finally {
      server.stop(true);
    }
  });
});

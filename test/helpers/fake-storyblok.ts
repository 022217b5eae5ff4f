import type { CmsStory } from "../../src/outside/storyblok/client";

export type FakeCmsMode = "ok" | "slow" | "down" | "rate-limited";

/**
 * A fake Storyblok Content Delivery API (v2) on 127.0.0.1: `GET /v2/cdn/stories/:id?token=...`
 * answers `{ story, cv, rels, links }` for a known story and 404 (Storyblok's body) for any
 * other. It can be slow, down (503) or rate-limiting (429 with Retry-After), and counts reads.
 */
export function startFakeStoryblok(token: string) {
  const stories = new Map<string, CmsStory>();
  const reads: string[] = [];
  const state = { mode: "ok" as FakeCmsMode, slowMs: 2_000, retryAfter: 30, cv: 1_795_000_000 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const match = url.pathname.match(/^\/v2\/cdn\/stories\/([^/]+)$/);
      if (!match || request.method !== "GET") return Response.json(["Not found"], { status: 404 });
      if (url.searchParams.get("token") !== token) return Response.json({ error: "Unauthorized" }, { status: 401 });
      const id = decodeURIComponent(match[1]!);
      reads.push(id);
      if (state.mode === "down") return Response.json({ error: "Service unavailable" }, { status: 503 });
      if (state.mode === "rate-limited")
        return Response.json(
          { error: "Too many requests" },
          { status: 429, headers: { "retry-after": String(state.retryAfter) } },
        );
      if (state.mode === "slow") await Bun.sleep(state.slowMs);
      const story = stories.get(id);
      if (!story) return Response.json(["This record could not be found"], { status: 404 });
      return Response.json({ story, cv: state.cv, rels: [], links: [] });
    },
  });
  return {
    endpoint: `http://127.0.0.1:${server.port}/v2`,
    stories,
    reads,
    state,
    /** Reads of one id so far. */
    readsOf: (id: string) => reads.filter((r) => r === id).length,
    stop: () => server.stop(true),
  };
}

export type FakeStoryblok = ReturnType<typeof startFakeStoryblok>;

/** An article story as a space with `article` and `author` components would publish it. */
export function articleStory(id: number, overrides: Partial<CmsStory> & { content?: Record<string, unknown> } = {}) {
  const { content, ...rest } = overrides;
  return {
    id,
    uuid: `uuid-${id}`,
    name: `Story ${id}`,
    full_slug: `news/story-${id}`,
    lang: "en",
    tag_list: ["politics", "europe"],
    first_published_at: "2026-11-20T08:00:00.000Z",
    published_at: "2026-11-21T09:00:00.000Z",
    content: {
      component: "article",
      headline: `Headline ${id}`,
      teaser: `Teaser ${id}`,
      image: { filename: `https://a.storyblok.com/f/1/${id}.jpg` },
      canonical_url: `https://news.example/story-${id}`,
      section: "world",
      authors: ["501"],
      ...content,
    },
    ...rest,
  } satisfies CmsStory;
}

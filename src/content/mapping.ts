import type { CmsStory } from "../outside/storyblok/client";

/** A content item as stored (one per site and CMS id). */
export interface ContentItem {
  readonly id: string;
  readonly type: string;
  readonly headline: string | null;
  readonly description: string | null;
  readonly image: string | null;
  readonly url: string | null;
  readonly publishedAt: string | null;
  readonly sections: string[];
  readonly tags: string[];
  readonly authors: { id: string; name: string | null }[];
  readonly contentType: string | null;
  readonly language: string | null;
  readonly deleted: boolean;
  /** Orders reads of one item: the story's last publish (epoch ms), or a 404's read time. */
  readonly cmsVersion: number;
  readonly readAt: string;
}

const MAX_TEXT = 2048;
const MAX_LIST = 100;

/**
 * Which story fields make an item. Storyblok's own members: `name` (headline fallback),
 * `full_slug` (url fallback, as a path), `tag_list`, `lang`, `first_published_at`,
 * `published_at` (the version). From the story's `content` (the space's own component):
 * `headline` or `title`; `description`, `teaser` or `lead`; `image` (an asset's `filename`
 * or a string); `canonical_url` or `url`; `section` or `sections`; `authors` or `author`
 * (author story ids or uuids); `component` as the content type.
 */
export function itemFromStory(
  id: string,
  story: CmsStory,
  cv: number | null,
  readAt: number,
  names: Map<string, string | null>,
): ContentItem {
  const c = story.content ?? {};
  const authorIds = stringList(c.authors ?? c.author);
  return {
    id,
    type: "story",
    headline: text(c.headline) ?? text(c.title) ?? text(story.name),
    description: text(c.description) ?? text(c.teaser) ?? text(c.lead),
    image: assetUrl(c.image),
    url: text(c.canonical_url) ?? text(c.url) ?? (text(story.full_slug) ? `/${text(story.full_slug)}` : null),
    publishedAt: instant(story.first_published_at) ?? instant(story.published_at),
    sections: stringList(c.sections ?? c.section),
    tags: stringList(story.tag_list),
    authors: authorIds.map((a) => ({ id: a, name: names.get(a) ?? null })),
    contentType: text(c.component),
    language: text(story.lang),
    deleted: false,
    cmsVersion: versionOf(story, cv, readAt),
    readAt: new Date(readAt).toISOString(),
  };
}

/** An author story's display name: `content.name`, else the story's name. */
export function authorName(story: CmsStory): string | null {
  return text(story.content?.name) ?? text(story.name);
}

/** The story's last publish time, else the answer's cache version (seconds), else the read time. */
export function versionOf(story: CmsStory, cv: number | null, readAt: number): number {
  const published = instant(story.published_at);
  if (published !== null) return Date.parse(published);
  if (cv !== null && Number.isFinite(cv)) return cv * 1000;
  return readAt;
}

function text(value: unknown): string | null {
  if (typeof value === "number") return String(value);
  if (typeof value !== "string") return null;
  const trimmed = value.trim();
  return trimmed === "" ? null : trimmed.slice(0, MAX_TEXT);
}

function assetUrl(value: unknown): string | null {
  if (value && typeof value === "object") return text((value as { filename?: unknown }).filename);
  return text(value);
}

function instant(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

function stringList(value: unknown): string[] {
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  const out: string[] = [];
  for (const entry of list) {
    const t =
      entry && typeof entry === "object"
        ? (text((entry as { id?: unknown }).id) ?? text((entry as { uuid?: unknown }).uuid))
        : text(entry);
    if (t !== null && !out.includes(t)) out.push(t.slice(0, 200));
    if (out.length >= MAX_LIST) break;
  }
  return out;
}

import type StoryblokClient from "storyblok-js-client";
import { type Fetch, UNTRACED } from "../../infra/tracing";
import type { ServiceConfig } from "../service-config-model";

/** A story (an article or an author) as the Content Delivery API answers it. */
export interface CmsStory {
  readonly id: number | string;
  readonly uuid?: string;
  readonly name?: string;
  readonly full_slug?: string;
  readonly lang?: string;
  readonly tag_list?: readonly string[];
  readonly published_at?: string | null;
  readonly first_published_at?: string | null;
  readonly content?: Record<string, unknown>;
}

/** One re-read: the story, or gone (a 404: deleted or unpublished). */
export type CmsRead =
  | { readonly found: true; readonly story: CmsStory; readonly cv: number | null }
  | { readonly found: false };

/** The CMS could not answer (down, slow, rate-limited, refused): the read is retried later. */
export class CmsUnavailable extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The CMS's own Retry-After, when it gave one (ms). */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

/** Reads one story by id. The one interface content re-reads go through. */
export interface CmsClient {
  readStory(id: string): Promise<CmsRead>;
}

/**
 * Storyblok's Content Delivery API (v2) through the maintained `storyblok-js-client`, one per
 * tenant's settings: `token` (a public or preview access token), `region`, and `endpoint` to
 * point it elsewhere (a fake in tests). Its response cache is off and every read carries a fresh
 * `cv`, so a re-read right after a publish is not answered from the CDN's older copy. Its own
 * 429 retries are reduced to one immediate retry: our queue does the backing off.
 */
export class StoryblokCms implements CmsClient {
  private readonly client: StoryblokClient;

  constructor(
    config: ServiceConfig<"storyblok">,
    timeoutMs: number,
    private readonly now: () => number,
    fetch: Fetch = UNTRACED.fetch("storyblok"),
  ) {
    // The client module is loaded here, on first use: a server with no CMS never holds it.
    const { default: Client } = require("storyblok-js-client") as typeof import("storyblok-js-client");
    this.client = new Client({
      fetch: fetch as typeof globalThis.fetch,
      accessToken: config.token,
      region: config.region,
      endpoint: config.endpoint,
      // The client counts its timeout in seconds.
      timeout: timeoutMs / 1000,
      cache: { type: "none", clear: "manual" },
      maxRetries: 1,
      retriesDelay: 0,
    });
  }

  async readStory(id: string): Promise<CmsRead> {
    let response: { data?: { story?: CmsStory; cv?: number } };
    try {
      response = (await this.client.get(`cdn/stories/${encodeURIComponent(id)}`, {
        version: "published",
        cv: this.now(),
      })) as typeof response;
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 404) return { found: false };
      throw new CmsUnavailable(
        `CMS read failed${typeof status === "number" ? ` (${status})` : ""}: ${messageOf(error)}`,
        typeof status === "number" ? status : null,
        retryAfterOf(error),
      );
    }
    const story = response?.data?.story;
    if (story === undefined || story === null || typeof story !== "object") {
      // The client answers a timeout or a refused connection without a story.
      throw new CmsUnavailable("CMS read failed: no story in the answer (timeout or unreachable)", null, null);
    }
    return { found: true, story, cv: typeof response.data?.cv === "number" ? response.data.cv : null };
  }
}

/** The error's message, with any access token (the protocol puts it in the query) blanked. */
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown }).message;
  return (typeof message === "string" ? message : String(error)).replace(/token=[^&\s"']*/gi, "token=…").slice(0, 200);
}

function retryAfterOf(error: unknown): number | null {
  const headers = (error as { response?: { headers?: unknown } }).response?.headers;
  let value: unknown;
  if (headers instanceof Headers) value = headers.get("retry-after");
  else if (headers && typeof headers === "object") value = (headers as Record<string, unknown>)["retry-after"];
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) * 1000 : null;
}

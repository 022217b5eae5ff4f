import { type Fetch, UNTRACED } from "../../infra/tracing";
import type { ServiceConfig } from "../service-config-model";

/** The vendor could not answer (down, slow, rate-limited, 5xx): the sync is retried later. */
export class VendorUnavailable extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The vendor's own Retry-After, when it gave one (ms). */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

/** A subscriber the vendor should hold as subscribed to one list. */
export interface VendorSubscriber {
  readonly email: string;
  readonly name: string;
  /** Extra attributes for the vendor's templates (the one-click unsubscribe URL per list). */
  readonly attribs: Readonly<Record<string, unknown>>;
}

/**
 * The one interface newsletter delivery goes through. Only subscribed addresses are ever sent:
 * `subscribe` carries the address; `unsubscribe` names a subscriber the vendor already holds
 * by the vendor's own id, so an address that never confirmed never reaches the vendor.
 */
export interface NewsletterVendor {
  /** The vendor's list for one of ours (found by tag, else created); returns its id. */
  ensureList(listId: string, name: string): Promise<number>;
  /** Holds the address as a confirmed subscriber of the list; returns the vendor's subscriber id. */
  subscribe(subscriber: VendorSubscriber, vendorListId: number): Promise<string>;
  /** Marks a held subscriber unsubscribed from the list. */
  unsubscribe(subscriberId: string, vendorListId: number): Promise<void>;
}

/** The tag that ties a vendor list to one of ours: `svc-<list uuid>`. */
const listTag = (listId: string) => `svc-${listId}`;

interface ListmonkList {
  id: number;
  tags?: string[] | null;
}

interface ListmonkSubscriber {
  id: number;
  email: string;
  name: string;
  status: string;
  attribs?: Record<string, unknown> | null;
  lists?: { id: number; subscription_status?: string }[] | null;
}

/**
 * listmonk's REST API (https://listmonk.app/docs/apis/apis/), our own small client (there is no
 * maintained one): HTTP basic auth with an API user, JSON bodies, every call under a timeout.
 * Lists are ours when tagged `svc-<uuid>`; they are single opt-in at the vendor, since the
 * double opt-in already happened here, and subscriptions are sent `confirmed`.
 */
export class ListmonkVendor implements NewsletterVendor {
  private readonly base: string;
  private readonly auth: string;

  constructor(
    config: ServiceConfig<"listmonk">,
    private readonly timeoutMs: number,
    /** Vendor list ids by our list id, shared across calls of one tenant's settings. */
    private readonly lists: Map<string, number> = new Map(),
    /** Traced when tracing is on (a client span per call, the trace context sent). */
    private readonly fetch: Fetch = UNTRACED.fetch("listmonk"),
  ) {
    this.base = config.url.replace(/\/+$/, "");
    this.auth = `Basic ${Buffer.from(`${config.username}:${config.password}`).toString("base64")}`;
  }

  async ensureList(listId: string, name: string): Promise<number> {
    const known = this.lists.get(listId);
    if (known !== undefined) return known;
    const tag = listTag(listId);
    const found = await this.call<{ data: { results: ListmonkList[] } }>(
      "GET",
      `/api/lists?per_page=all&tag=${encodeURIComponent(tag)}`,
    );
    let id = found.data.results.find((l) => (l.tags ?? []).includes(tag))?.id;
    if (id === undefined) {
      const created = await this.call<{ data: ListmonkList }>("POST", "/api/lists", {
        name,
        type: "private",
        optin: "single",
        tags: [tag],
      });
      id = created.data.id;
    }
    this.lists.set(listId, id);
    return id;
  }

  async subscribe(subscriber: VendorSubscriber, vendorListId: number): Promise<string> {
    const existing = await this.findByEmail(subscriber.email);
    if (existing === null) {
      const created = await this.call<{ data: ListmonkSubscriber }>("POST", "/api/subscribers", {
        email: subscriber.email,
        name: subscriber.name,
        status: "enabled",
        lists: [vendorListId],
        attribs: subscriber.attribs,
        preconfirm_subscriptions: true,
      });
      return String(created.data.id);
    }
    const attribs = { ...(existing.attribs ?? {}) } as Record<string, unknown>;
    let changed = false;
    for (const [key, value] of Object.entries(subscriber.attribs)) {
      const merged =
        typeof value === "object" && value !== null && typeof attribs[key] === "object" && attribs[key] !== null
          ? { ...(attribs[key] as object), ...(value as object) }
          : value;
      if (JSON.stringify(attribs[key]) !== JSON.stringify(merged)) {
        attribs[key] = merged;
        changed = true;
      }
    }
    if (changed) {
      // PUT replaces the subscriber: keep the lists it is on (not the ones it left).
      const lists = (existing.lists ?? []).filter((l) => l.subscription_status !== "unsubscribed").map((l) => l.id);
      await this.call("PUT", `/api/subscribers/${existing.id}`, {
        email: existing.email,
        name: existing.name,
        status: existing.status,
        lists,
        attribs,
        preconfirm_subscriptions: true,
      });
    }
    await this.call("PUT", "/api/subscribers/lists", {
      ids: [existing.id],
      action: "add",
      target_list_ids: [vendorListId],
      status: "confirmed",
    });
    return String(existing.id);
  }

  async unsubscribe(subscriberId: string, vendorListId: number): Promise<void> {
    await this.call("PUT", "/api/subscribers/lists", {
      ids: [Number(subscriberId)],
      action: "unsubscribe",
      target_list_ids: [vendorListId],
    });
  }

  private async findByEmail(email: string): Promise<ListmonkSubscriber | null> {
    const query = `subscribers.email = '${email.replace(/'/g, "''")}'`;
    const found = await this.call<{ data: { results: ListmonkSubscriber[] } }>(
      "GET",
      `/api/subscribers?per_page=1&query=${encodeURIComponent(query)}`,
    );
    return found.data.results[0] ?? null;
  }

  private async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await this.fetch(this.base + path, {
        method,
        headers: {
          authorization: this.auth,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: "error",
      });
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
      // Never the URL's credentials or the body (an address) in the message.
      throw new VendorUnavailable(timedOut ? "listmonk timed out" : "listmonk could not be reached", null, null);
    }
    if (response.status === 429 || response.status >= 500) {
      const header = Number(response.headers.get("retry-after"));
      await response.body?.cancel();
      throw new VendorUnavailable(
        `listmonk answered ${response.status}`,
        response.status,
        Number.isFinite(header) && header > 0 ? header * 1000 : null,
      );
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`listmonk refused ${method} ${path.split("?")[0]} with ${response.status}`);
    }
    return (await response.json()) as T;
  }
}

export type ListmonkMode = "ok" | "down" | "slow" | "rate_limited";

interface FakeList {
  id: number;
  name: string;
  type: string;
  optin: string;
  tags: string[];
}

interface FakeSubscriber {
  id: number;
  email: string;
  name: string;
  status: string;
  attribs: Record<string, unknown>;
  /** list id -> subscription status (`confirmed`, `unconfirmed`, `unsubscribed`). */
  lists: Map<number, string>;
}

/**
 * A real listmonk-speaking server on 127.0.0.1: the slice of listmonk's REST API the vendor
 * client uses (lists by tag, subscribers by query, list membership), basic auth, and modes to be
 * down (503), slow, or rate-limiting (429 with Retry-After). It records every address it was sent.
 */
export async function startFakeListmonk(options: { username?: string; password?: string; slowMs?: number } = {}) {
  const username = options.username ?? "svc-api";
  const password = options.password ?? "listmonk-secret";
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  const lists: FakeList[] = [];
  const subscribers: FakeSubscriber[] = [];
  const state = { mode: "ok" as ListmonkMode, requests: 0, refusedAuth: 0 };
  /** Every address that reached the fake in any request (query or body). */
  const seenAddresses = new Set<string>();
  const json = (data: unknown, status = 200) => Response.json(data, { status });
  const subscriberJson = (s: FakeSubscriber) => ({
    id: s.id,
    email: s.email,
    name: s.name,
    status: s.status,
    attribs: s.attribs,
    lists: [...s.lists].map(([id, status]) => ({ id, subscription_status: status })),
  });

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      state.requests++;
      if (state.mode === "down") return new Response("down", { status: 503 });
      if (state.mode === "rate_limited")
        return new Response("slow down", { status: 429, headers: { "retry-after": "9" } });
      if (state.mode === "slow") await Bun.sleep(options.slowMs ?? 2_000);
      if (request.headers.get("authorization") !== expected) {
        state.refusedAuth++;
        return json({ message: "invalid credentials" }, 403);
      }
      const url = new URL(request.url);
      const body = request.method === "GET" ? null : ((await request.json()) as Record<string, unknown>);
      const path = url.pathname;
      if (request.method === "GET" && path === "/api/lists") {
        const tag = url.searchParams.get("tag");
        const results = lists.filter((l) => tag === null || l.tags.includes(tag));
        return json({ data: { results, total: results.length } });
      }
      if (request.method === "POST" && path === "/api/lists") {
        const list: FakeList = {
          id: lists.length + 1,
          name: String(body?.name),
          type: String(body?.type),
          optin: String(body?.optin),
          tags: (body?.tags as string[]) ?? [],
        };
        lists.push(list);
        return json({ data: list });
      }
      if (request.method === "GET" && path === "/api/subscribers") {
        const query = url.searchParams.get("query") ?? "";
        const email = query.match(/^subscribers\.email = '(.*)'$/)?.[1]?.replace(/''/g, "'");
        if (email !== undefined) seenAddresses.add(email);
        const results = subscribers.filter((s) => s.email === email).map(subscriberJson);
        return json({ data: { results, total: results.length } });
      }
      if (request.method === "POST" && path === "/api/subscribers") {
        const email = String(body?.email);
        seenAddresses.add(email);
        if (subscribers.some((s) => s.email === email)) return json({ message: "E-mail already exists." }, 409);
        const preconfirm = body?.preconfirm_subscriptions === true;
        const subscriber: FakeSubscriber = {
          id: subscribers.length + 100,
          email,
          name: String(body?.name),
          status: String(body?.status ?? "enabled"),
          attribs: (body?.attribs as Record<string, unknown>) ?? {},
          lists: new Map(((body?.lists as number[]) ?? []).map((id) => [id, preconfirm ? "confirmed" : "unconfirmed"])),
        };
        subscribers.push(subscriber);
        return json({ data: subscriberJson(subscriber) });
      }
      const one = path.match(/^\/api\/subscribers\/(\d+)$/);
      if (request.method === "PUT" && one) {
        const subscriber = subscribers.find((s) => s.id === Number(one[1]));
        if (!subscriber) return json({ message: "not found" }, 404);
        seenAddresses.add(String(body?.email));
        subscriber.email = String(body?.email);
        subscriber.name = String(body?.name);
        subscriber.attribs = (body?.attribs as Record<string, unknown>) ?? {};
        const keep = new Set((body?.lists as number[]) ?? []);
        for (const id of [...subscriber.lists.keys()]) if (!keep.has(id)) subscriber.lists.delete(id);
        for (const id of keep) if (!subscriber.lists.has(id)) subscriber.lists.set(id, "confirmed");
        return json({ data: subscriberJson(subscriber) });
      }
      if (request.method === "PUT" && path === "/api/subscribers/lists") {
        const ids = (body?.ids as number[]) ?? [];
        const targets = (body?.target_list_ids as number[]) ?? [];
        for (const subscriber of subscribers.filter((s) => ids.includes(s.id))) {
          for (const list of targets) {
            if (body?.action === "add") subscriber.lists.set(list, String(body?.status ?? "unconfirmed"));
            else if (body?.action === "unsubscribe") subscriber.lists.set(list, "unsubscribed");
            else if (body?.action === "remove") subscriber.lists.delete(list);
          }
        }
        return json({ data: true });
      }
      return json({ message: "not found" }, 404);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    username,
    password,
    state,
    lists,
    seenAddresses,
    /** The fake's view: address -> status on the list tagged for our list id. */
    membersOf(listId: string): Record<string, string> {
      const list = lists.find((l) => l.tags.includes(`svc-${listId}`));
      if (!list) return {};
      const out: Record<string, string> = {};
      for (const s of subscribers) {
        const status = s.lists.get(list.id);
        if (status !== undefined) out[s.email] = status;
      }
      return out;
    },
    subscriber: (email: string) => subscribers.find((s) => s.email === email),
    stop: () => server.stop(true),
  };
}

export type FakeListmonk = Awaited<ReturnType<typeof startFakeListmonk>>;

import { basicDocument } from "../fixtures/documents";
import type { Harness } from "../helpers/harness";

/** A site with two organization pipelines and features that read them. */
export function streamingDocument() {
  return basicDocument({
    pipelines: {
      engagement: {
        source: "organization",
        columns: { score: "number", visits: "integer", churn_risk: "boolean", segment: "string" },
      },
      loyalty: { source: "organization", columns: { tier: "integer" } },
    },
    features: {
      retain: {
        purpose: "decision",
        outcomes: { offer: { type: "allow", fields: { offer: "win-back" } }, none: {} },
        rules: [{ when: { fact: "streaming.engagement.churn_risk", eq: true }, then: "offer" }],
        default: "none",
        onError: "none",
      },
      loyal: {
        purpose: "decision",
        outcomes: { gold: { type: "allow" }, unknown: {}, other: {} },
        rules: [
          { when: { fact: "streaming.loyalty.tier", exists: false }, then: "unknown" },
          { when: { fact: "streaming.loyalty.tier", gte: 3 }, then: "gold" },
        ],
        default: "other",
        onError: "other",
      },
      plain: { purpose: "decision", outcomes: { on: {} }, default: "on", onError: "on" },
    },
  });
}

/** A new user of the default tenant; returns its id. */
export async function newUser(h: Harness, email: string): Promise<string> {
  const res = await h.admin("POST", "/admin/tenants/default/users", { email });
  return ((await res.json()) as { user: { id: string } }).user.id;
}

export type Reply = { received: number; rejected: Record<string, number> };

/** POST /v1/streaming/{pipeline} with a key. */
export function postRows(
  h: Harness,
  key: string,
  pipeline: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return h.request("POST", `/v1/streaming/${pipeline}`, { headers: { "x-api-key": key, ...headers }, body });
}

/** The outcome keyed decide answers for one feature and user. */
export async function outcomeFor(h: Harness, key: string, feature: string, userId: string): Promise<string> {
  const res = await h.request("POST", "/v1/decide", {
    headers: { "x-svc-site-id": "news", "x-api-key": key },
    body: { features: [feature], userId },
  });
  if (res.status !== 200) throw new Error(`decide answered ${res.status}`);
  return ((await res.json()) as { decisions: Record<string, { outcome: string }> }).decisions[feature]!.outcome;
}

/** Stored values of a user's pipeline row (null members dropped), or undefined. */
export async function stored(h: Harness, userId: string, pipeline = "engagement") {
  const rows = await h.deps.streamingStore.rowsOf("default", "news", [userId]);
  const row = rows.find((r) => r.pipeline === pipeline);
  if (!row) return undefined;
  const values = Object.fromEntries(Object.entries(row.values).filter(([, v]) => v !== null));
  return { windowEnd: row.windowEnd, values };
}

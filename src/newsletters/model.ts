import { t } from "elysia";
import { UUID_PATTERN } from "../core/document-schema";

/** At most this many list ids in one PUT. */
export const MAX_LIST_IDS = 100;

const ListId = t.String({ pattern: UUID_PATTERN, description: "a list id (uuid)" });

export const SubscriptionsQuery = t.Object({
  userId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
});

export const SubscriptionsBody = t.Object({
  subscribed: t.Array(ListId, { maxItems: MAX_LIST_IDS }),
  email: t.Optional(t.String({ format: "email", maxLength: 254 })),
  userId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
});

export type SubscriptionsInput = (typeof SubscriptionsBody)["static"];

/** One deployed list as `GET /v1/newsletters/lists` answers it. */
export interface ListJson {
  id: string;
  slug: string;
  label: string;
  description: string | null;
  doubleOptIn: boolean;
}

/** A list entry of the subscription routes (the spec's "Newsletter list entry"). */
export interface SubscriptionJson {
  id: string;
  slug: string;
  label: string;
  description: string | null;
  status: string;
}

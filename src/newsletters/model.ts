import { t } from "elysia";
import { UUID_PATTERN } from "../core/document-schema";

/** At most this many list ids in one PUT. */
const MAX_LIST_IDS = 100;

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

/** What both answers below say of a list itself (ListJson's and SubscriptionJson's first fields). */
const listFields = {
  id: t.String({ format: "uuid" }),
  slug: t.String(),
  label: t.String(),
  description: t.Union([t.String(), t.Null()]),
};

/** GET /v1/newsletters/lists: the site's deployed lists. */
export const ListsAnswer = t.Object(
  {
    lists: t.Array(
      t.Object(
        {
          ...listFields,
          doubleOptIn: t.Boolean(),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

/** The subscription routes: every deployed list with the person's standing (spec, Newsletter list entry). */
export const SubscriptionsAnswer = t.Object(
  {
    subscriptions: t.Array(
      t.Object(
        {
          ...listFields,
          status: t.String({ description: "subscribed, unsubscribed, pending, unknown (open set)." }),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

import { t } from "elysia";

export const StreamingParams = t.Object({ pipeline: t.String({ minLength: 1, maxLength: 128 }) });

/**
 * `{ rows: [...] }`: each row is checked by the service (a row that is not an object counts as
 * `type_mismatch` instead of failing the batch); other members of the body are ignored. The
 * 1,000-row limit is the service's (413), not the schema's.
 */
export const StreamingBody = t.Object({ rows: t.Array(t.Unknown()) });

export const StreamingReplySchema = t.Object({
  received: t.Integer({ minimum: 0 }),
  rejected: t.Record(t.String(), t.Integer({ minimum: 1 })),
});

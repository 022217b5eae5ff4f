import { t } from "elysia";

/** What is recorded for one operator action (never a secret: see `summary.ts`). */
export interface AuditRecord {
  at: Date;
  actor: string;
  tenantId: string | null;
  siteId: string | null;
  /** The route's method and pattern, e.g. `POST /tenants/:tenant/sites/:site/deploy`. */
  action: string;
  /** The route's parameters (ids), e.g. `tenant=default site=news`. */
  target: string;
  summary: string;
  /** The action in words, with who did it ("key 'my CMS' issued on site demo by ana@example.com"). */
  words: string;
}

/** An entry as the admin API and the CLI show it. */
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  tenant: string | null;
  site: string | null;
  action: string;
  target: string;
  summary: string;
  /** What was done, in words, with who did it; `action`, `target` and `summary` stay the raw record. */
  words: string;
}

export interface AuditQuery {
  tenantId?: string;
  siteId?: string;
  before?: number;
  limit: number;
}

export const AuditListQuery = t.Object(
  {
    tenant: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
    site: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
    before: t.Optional(t.Numeric({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
    limit: t.Optional(t.Numeric({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);

/** GET /admin/audit: newest first; `next` is the `before` of the next page (null at the end). */
export const AuditAnswer = t.Object({
  entries: t.Array(
    t.Object({
      id: t.Integer(),
      at: t.String({ format: "date-time" }),
      actor: t.String(),
      tenant: t.Union([t.String(), t.Null()]),
      site: t.Union([t.String(), t.Null()]),
      action: t.String(),
      target: t.String(),
      summary: t.String(),
    }),
  ),
  next: t.Union([t.Integer(), t.Null()]),
});

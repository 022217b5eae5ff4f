import { t } from "elysia";

const siteId = t.String({ minLength: 1, maxLength: 128 });
const tenantId = t.String({ pattern: "^[a-z0-9][a-z0-9._-]{0,63}$" });

export const TenantParams = t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }) });
export const SiteParams = t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }), site: siteId });
export const KeyParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  site: siteId,
  keyId: t.String({ format: "uuid" }),
});

export const CreateTenantBody = t.Object(
  {
    id: tenantId,
    hosts: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 253, pattern: "^[A-Za-z0-9.-]+$" }), { maxItems: 100 }),
    ),
    default: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);

export const CreateSiteBody = t.Object({ id: siteId }, { additionalProperties: false });

export const DeployBody = t.Object(
  { document: t.Unknown(), preview: t.Optional(t.Boolean()) },
  { additionalProperties: false },
);

export const IssueKeyBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100 }),
    expiresInDays: t.Optional(t.Integer({ minimum: 1, maximum: 3650 })),
    permissions: t.Optional(t.Array(t.Union([t.Literal("streaming:write")]), { maxItems: 1 })),
  },
  { additionalProperties: false },
);

export const PreviewTokenBody = t.Object(
  { ttlSeconds: t.Optional(t.Integer({ minimum: 1, maximum: 86_400 })) },
  { additionalProperties: false },
);

export const CreateUserBody = t.Object(
  { email: t.String({ format: "email", maxLength: 254 }) },
  { additionalProperties: false },
);

export const UserParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  user: t.String({ format: "uuid" }),
});

export const GrantParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  user: t.String({ format: "uuid" }),
  grant: t.String({ minLength: 1, maxLength: 128 }),
});

export const AddGrantBody = t.Object(
  {
    grant: t.String({ minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9_.:-]+$" }),
    expiresAt: t.Optional(t.String({ format: "date-time" })),
  },
  { additionalProperties: false },
);

export const IdentityProviderBody = t.Object(
  {
    issuer: t.String({ minLength: 1, maxLength: 2048 }),
    jwksUrl: t.String({ minLength: 1, maxLength: 2048, pattern: "^https?://" }),
  },
  { additionalProperties: false },
);

import { Type } from "@sinclair/typebox";
import { type TSchema, t } from "elysia";

/**
 * A JSON whole number. Not Elysia's `t.Integer`: that one also accepts digit strings, and its
 * default (0) makes Elysia merge the body into `{}` before the check, so a body of `0` or `[]`
 * passed as `{}` on a route whose members are all optional.
 */
const wholeNumber = (range: { minimum: number; maximum: number }) => Type.Integer(range);

const siteId = t.String({ minLength: 1, maxLength: 128 });
const tenantId = t.String({ pattern: "^[a-z0-9][a-z0-9._-]{0,63}$" });

export const TenantParams = t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }) });
export const SiteParams = t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }), site: siteId });
export const KeyParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  site: siteId,
  keyId: t.String({ format: "uuid" }),
});

/** An http(s) origin without a path; checked with URL in the service (publicOrigin), which says so. */
const publicUrl = t.String({ minLength: 1, maxLength: 2048 });

export const CreateTenantBody = t.Object(
  {
    id: tenantId,
    hosts: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 253, pattern: "^[A-Za-z0-9.-]+$" }), { maxItems: 100 }),
    ),
    default: t.Optional(t.Boolean()),
    /** The origin of links in the tenant's mail, e.g. https://id.news.example. */
    publicUrl: t.Optional(publicUrl),
  },
  { additionalProperties: false },
);

export const PublicUrlBody = t.Object({ publicUrl }, { additionalProperties: false });

export const CreateSiteBody = t.Object({ id: siteId }, { additionalProperties: false });

/** A document as JSON (`document`), or as the text its author wrote (`source`, kept as sent). */
export const DeployBody = t.Object(
  {
    document: t.Optional(t.Unknown()),
    source: t.Optional(t.String({ minLength: 1 })),
    preview: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);

export const IssueKeyBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100 }),
    expiresInDays: t.Optional(wholeNumber({ minimum: 1, maximum: 3650 })),
    permissions: t.Optional(t.Array(t.Union([t.Literal("streaming:write")]), { maxItems: 1 })),
  },
  { additionalProperties: false },
);

export const PreviewTokenBody = t.Object(
  { ttlSeconds: t.Optional(wholeNumber({ minimum: 1, maximum: 86_400 })) },
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

/** A stored version: a positive whole number, as the path gives it (up to 9 digits, an int4). */
export const VersionParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  site: siteId,
  version: t.String({ pattern: "^[1-9][0-9]{0,8}$" }),
});

export const DiffBody = t.Object({ document: t.Unknown() }, { additionalProperties: false });

export const ContentKeyParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  site: siteId,
  keyId: t.String({ pattern: "^[A-Za-z0-9._-]{1,64}$" }),
});

/** A rotation's new secret: given (the CMS already has it), or left out for one made here and answered once. */
export const RotateContentKeyBody = t.Object(
  { secret: t.Optional(t.String({ minLength: 16, maxLength: 512 })) },
  { additionalProperties: false },
);

const ContentKeyInfo = t.Object({
  id: t.String(),
  fingerprint: t.String({ description: "sha256: and the first 16 hex digits of the secret's SHA-256" }),
  createdAt: t.String({ format: "date-time" }),
  rotatedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
});

export const ContentKeysAnswer = t.Object({ contentKeys: t.Array(ContentKeyInfo) });

export const RotatedContentKeyAnswer = t.Object({
  contentKey: ContentKeyInfo,
  secret: t.Optional(t.String({ description: "only when the service made it: shown this once, never again" })),
});

/** Answer models of the operator plane's tenant, site and key routes (documentation only). */
const nullableInteger = t.Union([t.Number({ multipleOf: 1 }), t.Null()]);

export const TenantsAnswer = t.Object({
  tenants: t.Array(
    t.Object(
      {
        id: t.String(),
        isDefault: t.Boolean(),
        hosts: t.Array(t.String()),
        identityProvider: t.Union([t.Object({}, { additionalProperties: true }), t.Null()]),
        publicUrl: t.Union([t.String(), t.Null()]),
      },
      { additionalProperties: true },
    ),
  ),
});

export const CreatedTenantAnswer = t.Object({
  tenant: t.Object(
    { id: t.String(), hosts: t.Array(t.String()), default: t.Boolean(), publicUrl: t.Union([t.String(), t.Null()]) },
    { additionalProperties: true },
  ),
});

export const SitesAnswer = t.Object({
  sites: t.Array(
    t.Object(
      {
        tenantId: t.String(),
        id: t.String(),
        disabled: t.Boolean(),
        liveVersion: nullableInteger,
        previewVersion: nullableInteger,
      },
      { additionalProperties: true },
    ),
  ),
});

export const CreatedSiteAnswer = t.Object({
  site: t.Object(
    {
      id: t.String(),
      tenant: t.String(),
      disabled: t.Boolean(),
      liveVersion: nullableInteger,
      previewVersion: nullableInteger,
    },
    { additionalProperties: true },
  ),
});

/** One API key as the operator plane lists it; the value itself is never listed. */
const KeyListingAnswer = t.Object(
  {
    id: t.String({ format: "uuid" }),
    site: t.String(),
    name: t.String(),
    prefix: t.String({ description: "svc_ plus six characters." }),
    permissions: t.Array(t.String()),
    status: t.String({ description: "active, revoked, expired (open set)." }),
    requests: t.Number({ multipleOf: 1 }),
    lastUsed: t.Union([t.String(), t.Null()]),
    expires: t.Union([t.String(), t.Null()]),
    createdAt: t.String(),
  },
  { additionalProperties: true },
);

export const KeysAnswer = t.Object({ keys: t.Array(KeyListingAnswer) });

/** An issued key: the listing and, this once, the value. */
export const IssuedKeyAnswer = t.Composite(
  [KeyListingAnswer, t.Object({ key: t.String({ description: "svc_..." }) })],
  {
    additionalProperties: true,
  },
);

export const RevokedKeyAnswer = t.Object({ key: KeyListingAnswer });

/** Answer models of the operator plane's user, grant and preview-token routes (documentation only). */
export const CreatedUserAnswer = t.Object({
  user: t.Object(
    { id: t.String({ format: "uuid" }), email: t.String(), emailVerified: t.Boolean() },
    { additionalProperties: true },
  ),
  created: t.Boolean({ description: "False when the address already belonged to a user." }),
});

const GrantView = t.Object(
  { grant: t.String(), expiresAt: t.Union([t.String(), t.Null()]) },
  { additionalProperties: true },
);

export const GrantsAnswer = t.Object({ grants: t.Array(GrantView) });
export const GrantAnswer = t.Object({ grant: GrantView });
export const RevokedGrantAnswer = t.Object({ revoked: t.Boolean() });
export const PreviewTokenAnswer = t.Object({
  token: t.String({ description: "Send it as x-svc-preview." }),
  expiresAt: t.String(),
});

const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()]);
const version = t.Integer({ minimum: 1 });
const stage = t.Union([t.Literal("live"), t.Literal("preview")]);

/** PUT and DELETE /admin/tenants/:tenant/identity-provider (null once disconnected). */
export const IdentityProviderAnswer = t.Object({
  tenant: t.String(),
  identityProvider: nullable(t.Object({ issuer: t.String(), jwksUrl: t.String() })),
});

/** PUT and DELETE /admin/tenants/:tenant/public-url (null once cleared). */
export const PublicUrlAnswer = t.Object({ tenant: t.String(), publicUrl: nullable(t.String()) });

/** POST .../disable and .../enable. */
export const SiteStateAnswer = t.Object({
  site: t.Object({ id: t.String(), tenant: t.String(), disabled: t.Boolean() }),
});

/** POST .../deploy: the version stored, live or staged. */
export const DeploymentAnswer = t.Object({
  deployment: t.Object({ site: t.String(), tenant: t.String(), version, stage }),
});

/** POST .../documents/:version/publish: the version now live, and the one it replaced. */
export const PublishedAnswer = t.Object({
  deployment: t.Object({
    site: t.String(),
    tenant: t.String(),
    version,
    stage: t.Literal("live"),
    previousVersion: nullable(version),
  }),
});

const versionFields = {
  version,
  stage,
  createdAt: t.String({ format: "date-time" }),
  live: t.Boolean(),
  preview: t.Boolean(),
};

/** GET .../documents: the history, newest first. */
export const DocumentsAnswer = t.Object({
  site: t.String(),
  tenant: t.String(),
  liveVersion: nullable(version),
  previewVersion: nullable(version),
  documents: t.Array(t.Object(versionFields)),
});

/** GET .../documents/:version: one version with its document (docs/site-document.md). */
export const DocumentVersionAnswer = t.Object({
  ...versionFields,
  document: t.Object({}, { additionalProperties: true, description: "The site document as stored." }),
});

/** POST .../diff: the changes deploying the document would make, at their JSON pointers. */
export const DiffAnswer = t.Object({
  live: nullable(version),
  changes: t.Array(
    t.Object({
      op: t.Union([t.Literal("add"), t.Literal("remove"), t.Literal("replace")]),
      path: t.String({ description: "A JSON pointer (RFC 6901); empty for the whole document." }),
      from: t.Optional(t.Unknown({ description: "The value before (remove, replace)." })),
      to: t.Optional(t.Unknown({ description: "The value after (add, replace)." })),
    }),
  ),
});

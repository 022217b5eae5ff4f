import { t } from "elysia";

export const MagicLinkBody = t.Object({
  email: t.String({ format: "email", maxLength: 254 }),
  callbackURL: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
});

export const MagicLinkPageQuery = t.Object({
  token: t.String({ minLength: 1, maxLength: 512 }),
  site: t.String({ minLength: 1, maxLength: 128 }),
  callbackURL: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
});

export const ConsumeBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 512 }),
  callbackURL: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
});

export const UserDetailsBody = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    firstName: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 100 }), t.Null()])),
    lastName: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 100 }), t.Null()])),
    userTraits: t.Optional(t.Record(t.String({ minLength: 1, maxLength: 128 }), t.Unknown())),
  },
  { additionalProperties: false },
);

export const ExchangeBody = t.Optional(
  t.Object({
    subject_token: t.Optional(t.String({ minLength: 1, maxLength: 8192 })),
    subject_token_type: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  }),
);

const subject = t.String({ minLength: 1, maxLength: 512 });

export const RevokeSessionsBody = t.Object({
  subject,
  cause: t.Union([t.Literal("lock"), t.Literal("password_reset")]),
});

export const ChangeIdentifierBody = t.Object({
  subject,
  email: t.String({ format: "email", maxLength: 254 }),
  changedAt: t.String({ format: "date-time" }),
  emailVerified: t.Optional(t.Boolean()),
});

export const ChangeSubjectBody = t.Object({ subject, newSubject: subject });

export const EraseBody = t.Object({ subject });

/** A user as the identity routes answer it (spec, Resources: User). */
export const UserAnswer = t.Object(
  {
    id: t.String({ format: "uuid" }),
    email: t.String(),
    emailVerified: t.Boolean(),
    name: t.Union([t.String(), t.Null()]),
    firstName: t.Union([t.String(), t.Null()]),
    lastName: t.Union([t.String(), t.Null()]),
    image: t.Union([t.String(), t.Null()]),
  },
  { additionalProperties: true },
);

/** A session as sign-in style calls answer it (spec, Resources: Session). */
export const SessionAnswer = t.Object(
  { id: t.String({ format: "uuid" }), kind: t.String({ description: "Only value `svc`." }), expiresAt: t.String() },
  { additionalProperties: true },
);

/** Exchange and magic-link consume: a new session; its token is in `set-auth-token` for native clients. */
export const SignedInAnswer = t.Object({ user: UserAnswer, session: SessionAnswer }, { additionalProperties: true });

/** get-session: the session, or two nulls when signed out; `exchanged: true` once, in `dual`. */
export const CurrentSessionAnswer = t.Object(
  {
    user: t.Union([UserAnswer, t.Null()]),
    session: t.Union([SessionAnswer, t.Null()]),
    exchanged: t.Optional(t.Literal(true)),
  },
  { additionalProperties: true },
);

export const SignOutAnswer = t.Object(
  {
    success: t.Boolean(),
    logoutUrl: t.Union([t.String(), t.Null()], { description: "The upstream sign-out page, to send the browser to." }),
  },
  { additionalProperties: true },
);

/** Every upstream push: `applied: false` means nothing changed, so a retry is safe. */
export const UpstreamPushAnswer = t.Object(
  { success: t.Boolean(), userId: t.String({ format: "uuid" }), applied: t.Boolean() },
  { additionalProperties: true },
);

/** GET /v1/id/config: what a site's pages need to offer sign-in (public). */
export const IdentityConfigAnswer = t.Object(
  {
    site: t.String(),
    identityMode: t.String({ description: "external_only, dual or svc_only (open set)." }),
    signInEnabled: t.Boolean(),
    logoutUrl: t.Union([t.String(), t.Null()]),
  },
  { additionalProperties: true },
);

/** GET /v1/id/traits: the site's declared user traits, by name. */
export const TraitsAnswer = t.Object({ traits: t.Record(t.String(), t.Unknown()) }, { additionalProperties: true });

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

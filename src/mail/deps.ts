import type { Database, Db } from "../../db/client";
import type { Config } from "../config";
import type { Logger } from "../logger";
import { logTransport, type MailTransport, noMailTransport, Outbox, smtpTransport } from "./outbox";
import { SealedText } from "./sealed-text";

/** Builds the outbox (src/deps.ts) on the configured transport, or on `transport` (tests). */
export function createOutbox(input: {
  readonly db: Db;
  readonly kind: Database["kind"];
  readonly config: Pick<Config, "smtpUrl" | "mailFrom" | "databaseUrl" | "secret">;
  readonly logger: Logger;
  readonly now: () => number;
  readonly transport?: MailTransport;
}): Outbox {
  const { config } = input;
  // Without SMTP, mail is printed only for the embedded development store; with a Postgres
  // server (DATABASE_URL) it is refused, so live sign-in links never reach a production log.
  const transport =
    input.transport ??
    (config.smtpUrl
      ? smtpTransport(config.smtpUrl, config.mailFrom)
      : config.databaseUrl === undefined
        ? logTransport()
        : noMailTransport());
  return new Outbox(
    input.db,
    transport,
    input.logger,
    input.now,
    input.kind === "server",
    new SealedText(config.secret, "mail-outbox"),
  );
}

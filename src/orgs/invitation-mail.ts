import type { Mail } from "../mail/outbox";

/**
 * Text a member chose (their display name, the organization's name), made safe to quote in a
 * mail as data: control characters and line breaks become spaces, the length is bounded, and
 * what a mail client would turn into a link (`scheme://`, `name.domain`, `user@host`) is
 * defanged (`[:]//`, `name[.]domain`, `user[at]host`).
 */
export function quotedData(value: string, max = 80): string {
  const flat = [...value.replace(/[\p{Cc}\u2028\u2029]+/gu, " ").trim()];
  const bounded = flat.length > max ? `${flat.slice(0, max).join("")}…` : flat.join("");
  const defanged = bounded
    .replace(/:\/\//g, "[:]//")
    .replace(/([\p{L}\p{N}_-])\.(?=[\p{L}\p{N}_-])/gu, "$1[.]")
    .replace(/@/g, "[at]");
  return `"${defanged.replace(/"/g, "'")}"`;
}

/**
 * The invitation mail. The subject and the opening are ours and name no one: what the inviter
 * chose (their display name, the organization's name) appears only further down, quoted and
 * defanged, as data the service did not check.
 */
export function invitationMail(input: {
  tenantId: string;
  to: string;
  role: string;
  days: number;
  link: string;
  organizationName: string;
  inviterName: string | null;
  inviterEmail: string;
}): Mail {
  const inviter =
    input.inviterName === null || input.inviterName.trim() === ""
      ? quotedData(input.inviterEmail)
      : `${quotedData(input.inviterName)} (${quotedData(input.inviterEmail)})`;
  return {
    tenantId: input.tenantId,
    to: input.to,
    subject: "You have an invitation to join an organization",
    text:
      `You have been invited to join an organization as ${input.role}.\n\n` +
      `Open this link to accept or decline (it works for ${input.days} days; sign in with this address first):\n\n` +
      `${input.link}\n\n` +
      "As given by the person who invited you (we have not checked it):\n" +
      `  Organization: ${quotedData(input.organizationName)}\n` +
      `  Invited by: ${inviter}\n\n` +
      "If you did not expect it, ignore this message.",
  };
}

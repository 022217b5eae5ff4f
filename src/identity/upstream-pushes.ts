import { checkClientTime, EVENT_TIME } from "../infra/client-time";
import { AppError } from "../infra/errors";
import type { UserRow } from "../users/store";
import type { IdentityDeps } from "./service";

/** Every push answers `{ success, userId, applied }`; `applied: false` means nothing changed. */
export interface PushResult {
  success: boolean;
  userId: string;
  applied: boolean;
}

type PushDeps = Pick<IdentityDeps, "identity" | "identityProvider" | "now">;

async function boundUser(deps: PushDeps, tenantId: string, subject: string): Promise<UserRow> {
  if (!deps.identityProvider(tenantId))
    throw new AppError("service_unavailable", "This tenant has no identity provider.");
  const user = await deps.identity.userBySubject(tenantId, subject);
  if (!user) throw new AppError("not_found", "No user is bound to that subject.");
  return user;
}

/** Deletes every service session of the user (access cookies lapse within 15 minutes). */
export async function revokeSessions(
  deps: PushDeps,
  tenantId: string,
  input: { subject: string },
): Promise<PushResult> {
  const user = await boundUser(deps, tenantId, input.subject);
  const removed = await deps.identity.deleteSessionsOfUser(tenantId, user.id);
  return { success: true, userId: user.id, applied: removed > 0 };
}

/** Moves the user's address when the change is strictly newer than the recorded one. */
export async function changeIdentifier(
  deps: PushDeps,
  tenantId: string,
  input: { subject: string; email: string; changedAt: string; emailVerified?: boolean },
): Promise<PushResult> {
  // A far-future time would make every later change "older": refused before anything is read.
  const changedAt = new Date(checkClientTime(input.changedAt, deps.now(), EVENT_TIME, "/changedAt"));
  const user = await boundUser(deps, tenantId, input.subject);
  if (user.emailChangedAt && changedAt.getTime() <= user.emailChangedAt.getTime()) {
    return { success: true, userId: user.id, applied: false };
  }
  const colliding = await deps.identity.otherUserWithEmail(tenantId, input.email, user.id);
  if (colliding) {
    await deps.identity.recordConflict({
      tenantId,
      kind: "email",
      userId: user.id,
      collidingUserId: colliding.id,
      value: input.email,
    });
    throw new AppError("conflict", "That address is already held by another user.", { collidingUserId: colliding.id });
  }
  await deps.identity.changeEmail(user.id, input.email, input.emailVerified === true, changedAt);
  return { success: true, userId: user.id, applied: true };
}

/** Links the user to a new upstream subject; a retry after success finds the old one unbound (404). */
export async function changeSubject(
  deps: PushDeps,
  tenantId: string,
  input: { subject: string; newSubject: string },
): Promise<PushResult> {
  const user = await boundUser(deps, tenantId, input.subject);
  if (input.newSubject === input.subject) return { success: true, userId: user.id, applied: false };
  const holder = await deps.identity.userBySubject(tenantId, input.newSubject);
  if (holder && holder.id !== user.id) {
    await deps.identity.recordConflict({
      tenantId,
      kind: "subject",
      userId: user.id,
      collidingUserId: holder.id,
      value: input.newSubject,
    });
    throw new AppError("conflict", "That subject is already bound to another user.", { collidingUserId: holder.id });
  }
  await deps.identity.rebindSubject(tenantId, input.subject, input.newSubject, user.id);
  return { success: true, userId: user.id, applied: true };
}

/** Anonymises the user in place, keeping the record and id; erasing again changes nothing. */
export async function eraseUser(deps: PushDeps, tenantId: string, input: { subject: string }): Promise<PushResult> {
  const user = await boundUser(deps, tenantId, input.subject);
  if (user.erasedAt) return { success: true, userId: user.id, applied: false };
  await deps.identity.erase(user.id, new Date(deps.now()));
  return { success: true, userId: user.id, applied: true };
}

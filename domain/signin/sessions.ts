/**
 * Login sessions as admins and users manage them: list a user's live sessions, end one, or end them all (sign
 * out everywhere, browser sessions included). An ended session's tokens are refused on their next request, on
 * every instance: the gate reads the session with every token.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { listUserSessions, revokeAllUserSessions, revokeUserSession } from "../../db/signin/sso.ts";
import { findUser } from "../../db/accounts/users.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type { Session, SessionListQuery } from "../../openapi/sessions.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import { AppError } from "../shared/errors.ts";
import { type Principal, requireUser } from "../shared/principal.ts";

export async function listSessions(
  sql: Sql,
  projectId: string,
  userId: string,
  q: SessionListQuery,
): Promise<PageOf<Session>> {
  return await retryRead(async () => {
    if (!(await findUser(sql, projectId, userId))) throw new AppError("user_not_found");
    return await listUserSessions(sql, projectId, userId, q);
  });
}

/** Ending a user's sessions acts on the user: the caller must cover what the user holds (403 otherwise). */
async function requireTarget(tx: Sql, caller: Principal, projectId: string, userId: string): Promise<void> {
  if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
  await requireCovered(tx, caller, projectId, { userId }, "user_id", "ending this user's sessions", {
    nameCodes: false,
  });
}

async function endOne(
  tx: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  sessionId: string,
  reason: "admin" | "user",
): Promise<void> {
  const ended = await revokeUserSession(tx, projectId, userId, sessionId);
  if (!ended) throw new AppError("session_not_found");
  await record(tx, {
    projectId,
    type: "session.revoked",
    source: sourceOf(caller),
    target: { type: "session", id: sessionId },
    details: { reason, user_id: userId, client_id: ended.client_id },
  });
}

export async function revokeSession(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  sessionId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    await requireTarget(tx, caller, projectId, userId);
    await endOne(tx, caller, projectId, userId, sessionId, "admin");
  });
}

/** Sign out everywhere: every login session and every browser session of the user. */
export async function revokeAllSessions(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    await requireTarget(tx, caller, projectId, userId);
    const count = await revokeAllUserSessions(tx, projectId, userId);
    await record(tx, {
      projectId,
      type: "user.sessions_ended",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      details: { sessions_revoked: count },
    });
  });
}

export async function listCurrentSessions(
  sql: Sql,
  principal: Principal,
  q: SessionListQuery,
): Promise<PageOf<Session>> {
  const { projectId, userId } = requireUser(principal);
  return await retryRead(() => listUserSessions(sql, projectId, userId, q));
}

/** The user ends one of their own sessions (this one too, if they name it). */
export async function revokeCurrentSession(sql: Sql, principal: Principal, sessionId: string): Promise<void> {
  const { projectId, userId } = requireUser(principal);
  await transaction(sql, (tx) => endOne(tx, principal, projectId, userId, sessionId, "user"));
}

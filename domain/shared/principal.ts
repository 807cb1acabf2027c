/** Who is calling: built once by the gate from a verified, live access token. */
import type { AuditEvent } from "../../openapi/audit.ts";
import { AppError } from "./errors.ts";

/** Where a request came from, as the HTTP edge read it: the audit event's `request`, always with its id. */
export type RequestInfo = NonNullable<AuditEvent["request"]> & { id: string };

export type Principal = {
  /** The token's project (its `aud`). */
  projectId: string;
  /** The client the token was issued to. */
  clientId: string;
  /** Present on user tokens (from the login); absent on client-credentials tokens. */
  userId?: string;
  /** The login session of a user token. */
  sessionId?: string;
  /** A user token of an organization (`org_id`): the user was a member when the gate checked it. */
  organizationId?: string;
  /** The token's id, for the audit trail and revocation. */
  jti: string;
  /** The token belongs to the system project. */
  isSystem: boolean;
  /** A client-credentials token of its project's admin client, which covers every permission of the project. */
  isAdmin: boolean;
  /** False when the token's client wants decisions without their reasons (`decision_reasons`). */
  decisionReasons?: false;
  /** Where the request came from, for the audit trail. */
  request?: RequestInfo;
  /** A token of an exchange (RFC 8693 `act`): the client acting for the subject, and its own actors nested. */
  act?: { sub: string; act?: unknown };
};

export type UserPrincipal = Principal & { userId: string; sessionId: string };

/**
 * Whose permissions the principal's are: the user's (through the role) on a user token, else the client's; on a
 * token of an exchange, what its subject holds within its actors' delegations and what it asked for.
 */
export function subjectOf(
  p: Principal,
): { userId: string } | { clientId: string } | { delegatedJti: string } {
  if (p.act) return { delegatedJti: p.jti };
  return p.userId !== undefined ? { userId: p.userId } : { clientId: p.clientId };
}

/** For operations that only a user's token may call; a client-credentials token has no user. */
export function requireUser(principal: Principal): UserPrincipal {
  if (principal.userId === undefined || principal.sessionId === undefined) {
    throw new AppError("user_not_found", { description: "the token belongs to a client, not a user" });
  }
  return principal as UserPrincipal;
}

/** Who is calling: built once by the gate from a verified, live access token. */
import { AppError } from "./errors.ts";

/** Where a request came from, as the HTTP edge read it (for the audit trail). */
export type RequestInfo = { id: string; ip: string | null; user_agent: string | null };

export type Principal = {
  /** The token's project (its `aud`). */
  projectId: string;
  /** The client the token was issued to. */
  clientId: string;
  /** Present on user tokens (from the login); absent on client-credentials tokens. */
  userId?: string;
  /** The login session of a user token. */
  sessionId?: string;
  /** The token's id, for the audit trail and revocation. */
  jti: string;
  /** The token belongs to the system project. */
  isSystem: boolean;
  /** A client-credentials token of its project's admin client, which covers every permission of the project. */
  isAdmin: boolean;
  /** Where the request came from, for the audit trail. */
  request?: RequestInfo;
};

export type UserPrincipal = Principal & { userId: string; sessionId: string };

/** For operations that only a user's token may call; a client-credentials token has no user. */
export function requireUser(principal: Principal): UserPrincipal {
  if (principal.userId === undefined || principal.sessionId === undefined) {
    throw new AppError("user_not_found", { description: "the token belongs to a client, not a user" });
  }
  return principal as UserPrincipal;
}

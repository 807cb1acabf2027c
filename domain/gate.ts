/** The bearer-token gate of every admin operation: 401 (token), then 404 (path project), then 403 (permission). */
import type { Sql } from "../db/connection.ts";
import { findLivePrincipal, type GateRow } from "../db/principals.ts";
import { AppError } from "./errors.ts";
import { uuidV7Time } from "./ids.ts";
import type { AccessClaims, TokenService } from "./tokens.ts";
import { SYSTEM_PROJECT_ID } from "./projects.ts";

/** `<resource code>:<permission code>` of a default resource, e.g. `users:create`. */
export type AdminPermission = `${"resources" | "roles" | "users" | "clients" | "projects"}:${
  | "read"
  | "create"
  | "update"}`;

/**
 * Which project the operation acts on, and whether a system-project token may act on it too.
 * - `own`: the path's project, which must be the token's.
 * - `own-or-system`: the path's project, from a token of that project or of the system project.
 * - `system`: no path project; only a system-project token.
 */
export type ProjectScope = "own" | "own-or-system" | "system";

/** What an operation needs: a permission on a project, or (`token`) only a live token of any project. */
export type Need = { permission: AdminPermission; scope: ProjectScope } | {
  permission: null;
  scope: "token";
};

export type Principal = AccessClaims & { isSystem: boolean };

const REALM = 'realm="access-control"';

function unauthorized(description: string, withError: boolean): AppError {
  return new AppError("invalid_authorization_token", {
    description,
    headers: { "WWW-Authenticate": withError ? `Bearer ${REALM}, error="invalid_token"` : `Bearer ${REALM}` },
  });
}

/** Reads `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 7235 §2.1). */
export function bearerToken(header: string | undefined): string {
  if (!header) throw unauthorized("the Authorization header with a bearer token is missing", false);
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!m) throw unauthorized("the Authorization header is not a bearer token", true);
  return m[1];
}

/** When a token was signed: its UUIDv7 jti carries milliseconds, `iat` only seconds. */
function issuedAt(claims: AccessClaims): Date {
  return new Date(uuidV7Time(claims.jti) ?? claims.iat * 1000);
}

/**
 * Whether a verified token is still live (its project, client, session, user; not revoked), and whether its
 * subject holds `permission` now. One query; undefined when the token is not live.
 */
export async function liveToken(
  sql: Sql,
  claims: AccessClaims,
  opts: { pathProjectId: string | null; permission: AdminPermission | null },
): Promise<GateRow | undefined> {
  const [resource, code] = opts.permission?.split(":") ?? [];
  return await findLivePrincipal(sql, {
    projectId: claims.aud,
    clientId: claims.client_id,
    subject: claims.sub,
    sessionId: claims.sid,
    jti: claims.jti,
    issuedAt: issuedAt(claims),
    pathProjectId: opts.pathProjectId,
    permission: opts.permission ? { resource, code } : null,
  });
}

export async function authorize(
  sql: Sql,
  tokens: TokenService,
  req: { authorization: string | undefined; pathProjectId: string | null },
  need: Need,
): Promise<Principal> {
  const claims = await tokens.verifyAccessToken(bearerToken(req.authorization));
  if (!claims) throw unauthorized("the bearer token is invalid or expired", true);
  const row = await liveToken(sql, claims, { pathProjectId: req.pathProjectId, permission: need.permission });
  if (!row) throw unauthorized("the bearer token is no longer valid", true);
  const isSystem = claims.aud === SYSTEM_PROJECT_ID;
  if (need.scope === "token") return { ...claims, isSystem };
  if (req.pathProjectId !== null && !row.path_project_exists) throw new AppError("project_not_found");
  const projectAllowed = need.scope === "system"
    ? isSystem
    : req.pathProjectId === claims.aud || (need.scope === "own-or-system" && isSystem);
  if (!projectAllowed) {
    throw new AppError("insufficient_permission", { description: "the token belongs to another project" });
  }
  if (!row.allowed) {
    throw new AppError("insufficient_permission", {
      description: `the token lacks the permission ${need.permission}`,
    });
  }
  return { ...claims, isSystem };
}

/** The bearer-token gate of every admin operation: 401 (token), then 404 (path project), then 403 (permission). */
import { retryRead, type Sql } from "../../db/connection.ts";
import { type AttachedRead, findLivePrincipal, type GateRow } from "../../db/authz/principals.ts";
import type { AdminPermission } from "./defaults.ts";
import { coversAll } from "./coverage.ts";
import { AppError } from "../shared/errors.ts";
import { uuidV7Time } from "../shared/ids.ts";
import type { Principal } from "../shared/principal.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import type { TokenService, VerifiedClaims } from "../keys/tokens.ts";

/**
 * Which project the operation acts on, and whether a system-project token may act on it too.
 * - `own`: the path's project, which must be the token's.
 * - `own-or-system`: the path's project, from a token of that project or of the system project.
 * - `system`: no path project; only a system-project token.
 * - `audience`: no path project; the token's own project (its `aud`), which the operation is about.
 */
export type ProjectScope = "own" | "own-or-system" | "system" | "audience";

/** What an operation needs: a permission on a project, or (`token`) only a live token of any project. */
export type Need = { permission: AdminPermission; scope: ProjectScope } | {
  permission: null;
  scope: "token";
};

/** 401 `invalid_authorization_token`; the HTTP edge adds the `WWW-Authenticate: Bearer` challenge. */
export function invalidToken(description: string): AppError {
  return new AppError("invalid_authorization_token", { description });
}

/** The description of each reason a bearer token is refused (RFC 6750 §3 `error_description`). */
const REFUSALS = {
  expired: "the access token expired: refresh it, or sign in again",
  not_access_token:
    "the bearer token is not an access token (an ID token?): send the token answer's access_token",
  invalid: "the bearer token is invalid: its format, signature or issuer is wrong",
  not_live:
    "the access token is no longer valid: it was revoked, or its session, user, client or project ended",
} as const;

/** When a token was signed: its UUIDv7 jti carries milliseconds, `iat` only seconds. */
export function issuedAt(claims: VerifiedClaims): Date {
  return new Date(uuidV7Time(claims.jti) ?? claims.iat * 1000);
}

/**
 * Whether a verified token is still live (its project, client, session, user; not revoked), and whether its
 * subject holds `permission` now. One query; undefined when the token is not live.
 */
export async function liveToken(
  sql: Sql,
  claims: VerifiedClaims,
  opts: { pathProjectId: string | null; permission: AdminPermission | null },
  read?: AttachedRead,
): Promise<GateRow | undefined> {
  const [resource, code] = opts.permission?.split(":") ?? [];
  return await retryRead(() =>
    findLivePrincipal(sql, {
      projectId: claims.aud,
      clientId: claims.client_id,
      subject: claims.sub,
      sessionId: claims.sid,
      jti: claims.jti,
      kid: claims.kid,
      issuedAt: issuedAt(claims),
      expiresAt: claims.exp,
      pathProjectId: opts.pathProjectId,
      permission: opts.permission ? { resource, code } : null,
      delegated: claims.act !== undefined,
      organizationId: claims.org_id ?? null,
    }, read)
  );
}

/** The principal of a verified claim set whose liveness `row` confirmed. */
export function principalOf(claims: VerifiedClaims, row: GateRow): Principal {
  return {
    projectId: claims.aud,
    clientId: claims.client_id,
    ...(claims.sid ? { userId: claims.sub, sessionId: claims.sid } : {}),
    ...(claims.org_id ? { organizationId: claims.org_id } : {}),
    jti: claims.jti,
    isSystem: claims.aud === SYSTEM_PROJECT_ID,
    isAdmin: row.is_admin,
    ...(row.decision_reasons ? {} : { decisionReasons: false }),
    ...(claims.act ? { act: claims.act } : {}),
  };
}

export type { AttachedRead };

/** A read the gate sent with its statement, and what it found (null: nothing, or it did not run). */
export type Attached = { read: AttachedRead; record: unknown };

/**
 * The record of an attached read when `read` is the very read that was attached (same statement, same
 * parameters): null when it found nothing. Undefined when no read, or another, was attached: the caller reads.
 */
export function attachedRecord<T>(attached: Attached | undefined, read: AttachedRead): T | null | undefined {
  if (attached === undefined || attached.read.text !== read.text) return undefined;
  const { params } = attached.read;
  if (params.length !== read.params.length || params.some((p, i) => p !== read.params[i])) return undefined;
  return attached.record as T | null;
}

/**
 * Checks a bearer token (undefined when none was sent) against what the operation needs. A `read` rides in the
 * gate's statement (one round trip for a gated read); it is returned only once every check has passed. It is
 * built only for a token whose signature holds and whose project may act on the path's.
 */
export async function authorize(
  sql: Sql,
  tokens: TokenService,
  req: { token: string | undefined; pathProjectId: string | null },
  need: Need,
  readOf?: (token: { projectId: string; organizationId: string | null }) => AttachedRead | null,
): Promise<{ principal: Principal; attached?: Attached }> {
  if (req.token === undefined) throw invalidToken("the Authorization header with a bearer token is missing");
  const claims = await tokens.verifyAccessToken(req.token);
  if (!claims) throw invalidToken(REFUSALS[await tokens.whyRefused(req.token)]);
  // No read for a token the checks below refuse on its project alone: another project's, or not the system
  // project's for an operation of the system project. (The statement would not run it either.)
  const system = claims.aud === SYSTEM_PROJECT_ID;
  const refusedByProject = need.scope === "system"
    ? !system
    : req.pathProjectId !== null && req.pathProjectId !== claims.aud && !system;
  const read = refusedByProject
    ? undefined
    : readOf?.({ projectId: claims.aud, organizationId: claims.org_id ?? null }) ?? undefined;
  const row = await liveToken(
    sql,
    claims,
    { pathProjectId: req.pathProjectId, permission: need.permission },
    read,
  );
  if (!row) {
    throw invalidToken(REFUSALS[claims.exp <= Date.now() / 1000 ? "expired" : "not_live"]);
  }
  const principal = principalOf(claims, row);
  const attached = read ? { read, record: row.record ?? null } : undefined;
  if (need.scope === "token") {
    // The operations of a token's own user or client (its account, its second factors): never an agent's.
    if (claims.act) {
      throw new AppError("insufficient_permission", {
        description: "a token of an exchange acts for its subject with permissions, not on its account",
      });
    }
    return { principal, attached };
  }
  if (req.pathProjectId !== null && !row.path_project_exists) throw new AppError("project_not_found");
  const projectAllowed = need.scope === "audience" ||
    (need.scope === "system"
      ? principal.isSystem
      : req.pathProjectId === principal.projectId || (need.scope === "own-or-system" && principal.isSystem) ||
        // Operators of the system project (its admin client, or a principal holding every system permission)
        // administer every project.
        (principal.isSystem && req.pathProjectId !== null &&
          await coversAll(sql, principal, req.pathProjectId)));
  if (!projectAllowed) {
    throw new AppError("insufficient_permission", { description: "the token belongs to another project" });
  }
  if (!row.allowed) {
    throw new AppError("insufficient_permission", {
      description: `the token lacks the permission ${need.permission}`,
    });
  }
  return { principal, attached };
}

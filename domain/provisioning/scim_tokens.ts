/**
 * SCIM tokens: long-lived bearer tokens of a client for its project's /scim/v2/{project_id}/ only
 * (docs/provisioning.md § The client and its token). Directories such as Entra ID ("Secret Token") and Okta
 * ("HTTP Header") send one fixed token and never fetch another; an access token lasts minutes. A SCIM token
 * acts as its client does, with the client's permissions at each request (`scim:read`, `scim:write`, and what
 * the client covers), while the client and project are active and until it expires or is revoked. Rotating the
 * client's secret or deactivating the client refuses the tokens made before, as it refuses its access tokens.
 */
import { transaction } from "../../db/connection.ts";
import type { Sql } from "../../db/connection.ts";
import { findClient } from "../../db/oauth/clients.ts";
import {
  deleteScimToken,
  findLiveScimToken,
  insertScimToken,
  listScimTokens,
} from "../../db/provisioning/scim_tokens.ts";
import type { CreateScimTokenRequest, ScimToken, ScimTokenWithSecret } from "../../openapi/clients.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { invalidToken } from "../authz/gate.ts";
import { requireActOn } from "../oauth/clients.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import type { Principal } from "../shared/principal.ts";
import { hashSecret } from "../shared/secrets.ts";

/** Every SCIM token starts with it, so that a bearer token says which kind it is (and secret scanners see it). */
export const SCIM_TOKEN_PREFIX = "scim_";
/** A client holds at most this many: enough to replace one without a gap. */
export const MAX_SCIM_TOKENS = 5;

/**
 * Makes a token for the client. The caller must be able to act on the client (cover its permissions), as
 * rotating its secret needs: the token carries them.
 */
export async function createScimToken(
  sql: Sql,
  caller: Principal,
  projectId: string,
  clientId: string,
  input: CreateScimTokenRequest,
): Promise<ScimTokenWithSecret> {
  const token = `${SCIM_TOKEN_PREFIX}${newSecret()}`;
  const row = await transaction(sql, async (tx) => {
    const client = await findClient(tx, projectId, clientId, { lock: true });
    if (!client) throw new AppError("client_not_found");
    await requireActOn(tx, caller, client, "making a SCIM token of this client");
    if (client.metadata_url !== null) {
      throw new AppError("invalid_params", {
        details: [{ field: "client_id", issue: "is a client of a metadata document: it has no credentials" }],
      });
    }
    if ((await listScimTokens(tx, projectId, clientId)).length >= MAX_SCIM_TOKENS) {
      throw new AppError("invalid_params", {
        details: [{
          field: "client_id",
          issue: `holds ${MAX_SCIM_TOKENS} SCIM tokens already: revoke one before making another`,
        }],
      });
    }
    const made = await insertScimToken(tx, {
      project_id: projectId,
      id: newId(),
      client_id: clientId,
      token_hash: hashSecret(token),
      description: input.description || null,
    }, input.expires_in_days ?? null);
    await record(tx, {
      projectId,
      type: "scim_token.created",
      source: sourceOf(caller),
      target: { type: "client", id: clientId },
      details: { scim_token_id: made.id, expires_at: made.expires_at },
    });
    return made;
  });
  return { ...row, token };
}

export async function listClientScimTokens(
  sql: Sql,
  projectId: string,
  clientId: string,
): Promise<{ data: ScimToken[] }> {
  if (!(await findClient(sql, projectId, clientId))) throw new AppError("client_not_found");
  return { data: await listScimTokens(sql, projectId, clientId) };
}

/** Revokes the token: the next SCIM request with it is refused. */
export async function revokeScimToken(
  sql: Sql,
  caller: Principal,
  projectId: string,
  clientId: string,
  tokenId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const client = await findClient(tx, projectId, clientId, { lock: true });
    if (!client) throw new AppError("client_not_found");
    await requireActOn(tx, caller, client, "revoking a SCIM token of this client");
    const gone = await deleteScimToken(tx, projectId, clientId, tokenId);
    if (!gone) throw new AppError("scim_token_not_found");
    await record(tx, {
      projectId,
      type: "scim_token.revoked",
      source: sourceOf(caller),
      target: { type: "client", id: clientId },
      details: { scim_token_id: tokenId },
    });
  });
}

/**
 * The principal of a SCIM token presented for the project's SCIM endpoints, or the gate's refusals: 401 when
 * it is no live token of this project, 403 when its client lacks `permission` now.
 */
export async function authorizeScimToken(
  sql: Sql,
  token: string,
  projectId: string,
  permission: "scim:read" | "scim:write",
): Promise<Principal> {
  const [resource, code] = permission.split(":");
  const row = await findLiveScimToken(sql, hashSecret(token), projectId, { resource, code });
  if (!row) {
    throw invalidToken(
      "the SCIM token is unknown, revoked or expired, or not this project's, or its client or project is inactive",
    );
  }
  if (!row.allowed) {
    throw new AppError("insufficient_permission", {
      description: `the token lacks the permission ${permission}`,
    });
  }
  return {
    projectId,
    clientId: row.client_id,
    jti: row.id,
    isSystem: projectId === SYSTEM_PROJECT_ID,
    isAdmin: row.is_admin,
    ...(row.decision_reasons ? {} : { decisionReasons: false as const }),
  };
}

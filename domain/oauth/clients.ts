/** Machine clients: created with a secret shown once, granted permissions directly, rotated, deactivated. */
import {
  clientListStatement,
  deleteClientRow,
  findClient,
  insertClient,
  restampClientCutoff,
  setClientDelegation,
  setClientMayAct,
  setClientPermissions,
  updateClientRow,
  updateClientSecret,
} from "../../db/oauth/clients.ts";
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { endSessions } from "../../db/oauth/sessions.ts";
import type {
  Client,
  ClientListQuery,
  ClientWithSecret,
  CreateClientRequest,
  UpdateClientRequest,
} from "../../openapi/clients.ts";
import type { PageOf } from "../../openapi/fields.ts";
import { diff, record, sourceOf, updateType } from "../audit/audit.ts";
import { consoleClientId } from "../console/client.ts";
import { requireCovered, requireCoversAll } from "../authz/coverage.ts";
import { endGrantsOf } from "../authz/object_grants.ts";
import { AppError } from "../shared/errors.ts";
import type { Attached, AttachedRead } from "../authz/gate.ts";
import { type JsonText, listPage } from "../authz/lists.ts";
import { newId, newSecret } from "../shared/ids.ts";
import { revokeTokensOfActor } from "../../db/oauth/delegated_tokens.ts";
import { checkPermissionIds, grantablePermissionIds, requireGrantable } from "../authz/permissions.ts";
import type { Principal } from "../shared/principal.ts";
import { hashSecret } from "../shared/secrets.ts";
import { checkDecisionClaims } from "./decision_claims.ts";
import { keepOrClear } from "../shared/updates.ts";

/**
 * The caller may act on the client only when it covers the client's permissions; a project's admin client,
 * which covers every permission, only by itself or by the system project's admin client.
 */
export async function requireActOn(tx: Sql, caller: Principal, target: Client, what: string): Promise<void> {
  if (target.is_admin) return await requireCoversAll(tx, caller, target.project_id, "client_id", what);
  await requireCovered(tx, caller, target.project_id, { clientId: target.id }, "client_id", what, {
    nameCodes: false,
  });
  // What it may carry for others counts too: acting on it (its secret, its type) reaches that.
  if (target.delegation && target.delegation.permission_ids.length > 0) {
    await requireCovered(
      tx,
      caller,
      target.project_id,
      { permissionIds: target.delegation.permission_ids },
      "client_id",
      what,
      { nameCodes: false },
    );
  }
}

type Lists = { redirect_uris: string[]; post_logout_redirect_uris: string[] };

/**
 * Whether this client's users consent before its first code (domain/signin/consent.ts) and its tokens carry only
 * what they consented to (grants/grant.ts): a client an admin marked `third_party`. Clients identified by a URL
 * will be third-party too: decide it here, from the client's row, and nowhere else.
 */
export const needsConsent = (client: { third_party: boolean }): boolean => client.third_party;

/**
 * A client's own redirect lists decide where its users' codes (and browsers after a logout) go, as the
 * project's do: setting or changing them needs a caller that covers the whole project, as the project's lists.
 */
async function requireListsChangeable(
  tx: Sql,
  caller: Principal,
  projectId: string,
  before: Lists,
  after: Lists,
): Promise<void> {
  for (const field of ["redirect_uris", "post_logout_redirect_uris"] as const) {
    if (sameList(before[field], after[field])) continue;
    await requireCoversAll(tx, caller, projectId, field, `changing a client's ${field}`);
  }
}

const NO_LISTS: Lists = { redirect_uris: [], post_logout_redirect_uris: [] };
const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export async function createClient(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateClientRequest,
): Promise<ClientWithSecret> {
  const id = newId();
  const secret = newSecret();
  return await transaction(sql, async (tx) => {
    const permissionIds = await grantablePermissionIds(tx, caller, projectId, input.permission_ids ?? []);
    const lists = {
      redirect_uris: input.redirect_uris ?? [],
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
    };
    await requireListsChangeable(tx, caller, projectId, NO_LISTS, lists);
    const delegation = input.delegation
      ? await grantablePermissionIds(tx, caller, projectId, input.delegation.permission_ids)
      : null;
    const decisionClaims = await checkDecisionClaims(tx, caller, projectId, [], input.decision_claims ?? []);
    await insertClient(tx, {
      ...lists,
      project_id: projectId,
      id,
      name: input.name,
      description: input.description || null,
      secret_hash: hashSecret(secret),
      is_active: input.is_active ?? true,
      token_endpoint_auth_method: input.token_endpoint_auth_method ?? "none",
      third_party: input.third_party ?? false,
      device_grant: input.device_grant ?? false,
      decision_reasons: input.decision_reasons ?? true,
      decision_claims: decisionClaims,
      properties: input.properties ?? {},
    });
    await setClientPermissions(tx, projectId, id, permissionIds);
    if (delegation) await setClientDelegation(tx, projectId, id, delegation);
    if (input.may_act) await setClientMayAct(tx, projectId, id, await mayActOf(tx, projectId, input.may_act));
    await record(tx, {
      projectId,
      type: "client.created",
      source: sourceOf(caller),
      target: { type: "client", id },
    });
    return { ...(await findClient(tx, projectId, id))!, client_secret: secret };
  });
}

/**
 * Updates the client; given `permission_ids` replace its grants, omitted ones leave them. Deactivation
 * refuses the client's tokens from the next request on and ends its users' sessions, for good: reactivating
 * does not revive them. A project's admin client can be neither deactivated nor stripped of its permissions,
 * so that no project (and not the system project) can lock its operators out; rotate its secret instead.
 */
export async function updateClient(
  sql: Sql,
  caller: Principal,
  projectId: string,
  clientId: string,
  input: UpdateClientRequest,
): Promise<Client> {
  const client = await transaction(sql, async (tx) => {
    const current = await findClient(tx, projectId, clientId, { lock: true });
    if (!current) throw new AppError("client_not_found");
    // Unknown ids are 404 before any 403: what exists is checked before who may touch it.
    const permissionIds = input.permission_ids === undefined
      ? undefined
      : await checkPermissionIds(tx, projectId, input.permission_ids);
    await requireActOn(tx, caller, current, "changing this client");
    if (current.is_admin) {
      if (!input.is_active) {
        throw new AppError("invalid_params", {
          details: [{ field: "is_active", issue: "the project's admin client cannot be deactivated" }],
        });
      }
      if (input.permission_ids !== undefined) {
        throw new AppError("invalid_params", {
          details: [{
            field: "permission_ids",
            issue: "the project's admin client's permissions cannot be changed",
          }],
        });
      }
    }
    if (current.metadata_url !== null) documentFieldsUnchanged(current, input);
    if (permissionIds) await requireGrantable(tx, caller, projectId, permissionIds);
    // What the client may carry for others: only a caller covering those permissions gives them.
    const delegation = input.delegation === undefined
      ? undefined
      : input.delegation === null
      ? null
      : await checkPermissionIds(tx, projectId, input.delegation.permission_ids);
    if (delegation) await requireGrantable(tx, caller, projectId, delegation);
    const lists = {
      redirect_uris: input.redirect_uris ?? current.redirect_uris,
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? current.post_logout_redirect_uris,
    };
    await requireListsChangeable(tx, caller, projectId, current, lists);
    const decisionClaims = input.decision_claims === undefined
      ? current.decision_claims
      : await checkDecisionClaims(tx, caller, projectId, current.decision_claims, input.decision_claims);
    await updateClientRow(tx, projectId, clientId, {
      ...lists,
      name: input.name,
      description: keepOrClear(input.description, current.description),
      is_active: input.is_active,
      token_endpoint_auth_method: input.token_endpoint_auth_method ?? current.token_endpoint_auth_method,
      third_party: input.third_party ?? current.third_party,
      device_grant: input.device_grant ?? current.device_grant,
      decision_reasons: input.decision_reasons ?? current.decision_reasons,
      decision_claims: decisionClaims,
      properties: input.properties ?? current.properties,
    });
    if (permissionIds) await setClientPermissions(tx, projectId, clientId, permissionIds);
    if (delegation !== undefined) await setClientDelegation(tx, projectId, clientId, delegation);
    // Turned off, the delegation's tokens end for good: turning it on again does not revive them.
    if (delegation === null && current.delegation !== null) {
      await revokeTokensOfActor(tx, projectId, clientId);
    }
    if (input.may_act !== undefined) {
      const mayAct = input.may_act === null ? null : await mayActOf(tx, projectId, input.may_act);
      await setClientMayAct(tx, projectId, clientId, mayAct);
    }
    if (current.is_active && !input.is_active) await endSessions(tx, { clientId });
    const after = (await findClient(tx, projectId, clientId))!;
    await record(tx, {
      projectId,
      type: updateType("client", current, after),
      source: sourceOf(caller),
      target: { type: "client", id: clientId },
      changes: diff(current, after),
    });
    return { before: current, after };
  });
  if (client.before.is_active && !client.after.is_active) await restampClientCutoff(sql, clientId);
  return client.after;
}

/**
 * A client of a metadata document (domain/oauth/client_metadata.ts) is what its document says: an update may block
 * it (`is_active`) or describe it, never change what the document decides.
 */
function documentFieldsUnchanged(current: Client, input: UpdateClientRequest): void {
  const fixed = "comes from the client's metadata document";
  const issues: { field: string; issue: string }[] = [];
  if (input.name !== current.name) issues.push({ field: "name", issue: fixed });
  const same = (a: string[] | undefined, b: string[]) =>
    a === undefined || JSON.stringify(a) === JSON.stringify(b);
  if (!same(input.redirect_uris, current.redirect_uris)) {
    issues.push({ field: "redirect_uris", issue: fixed });
  }
  if (!same(input.post_logout_redirect_uris, current.post_logout_redirect_uris)) {
    issues.push({ field: "post_logout_redirect_uris", issue: "a client of a metadata document has none" });
  }
  if ((input.token_endpoint_auth_method ?? "none") !== "none") {
    issues.push({
      field: "token_endpoint_auth_method",
      issue: "a client of a metadata document has no secret",
    });
  }
  if (input.third_party === false) {
    issues.push({ field: "third_party", issue: "a client of a metadata document always asks for consent" });
  }
  if (input.permission_ids !== undefined && input.permission_ids.length > 0) {
    issues.push({ field: "permission_ids", issue: "a client of a metadata document never acts as itself" });
  }
  if (input.device_grant === true) {
    issues.push({
      field: "device_grant",
      issue: "a client of a metadata document signs in with a browser only",
    });
  }
  if (input.delegation) {
    issues.push({ field: "delegation", issue: "a client of a metadata document acts for nobody" });
  }
  // Its identity is whatever host serves the document: the model's answers are not published to it.
  if (input.decision_claims !== undefined && input.decision_claims.length > 0) {
    issues.push({
      field: "decision_claims",
      issue: "a client of a metadata document gets no decision claims",
    });
  }
  if (issues.length > 0) throw new AppError("invalid_params", { details: issues });
}

/** `may_act` must name a client of the project (the built-in console client is none). */
async function mayActOf(tx: Sql, projectId: string, clientId: string): Promise<string> {
  if (!(await findClient(tx, projectId, clientId))) {
    throw new AppError("invalid_params", {
      details: [{ field: "may_act", issue: "no client of this project has this id" }],
    });
  }
  return clientId;
}

/**
 * Replaces the client's secret; the old one stops working at once, and so do the access tokens issued
 * before. The new one is shown only here. A client may rotate its own secret; any other caller must cover
 * the client's permissions.
 */
export async function rotateClientSecret(
  sql: Sql,
  caller: Principal,
  projectId: string,
  clientId: string,
): Promise<ClientWithSecret> {
  const secret = newSecret();
  const client = await transaction(sql, async (tx) => {
    const current = await findClient(tx, projectId, clientId, { lock: true });
    if (!current) throw new AppError("client_not_found");
    const itself = caller.userId === undefined && caller.clientId === clientId;
    if (!itself) await requireActOn(tx, caller, current, "rotating this client's secret");
    if (current.metadata_url !== null) {
      throw new AppError("invalid_params", {
        description: "a client of a metadata document has no secret: it proves its logins with PKCE",
      });
    }
    await updateClientSecret(tx, projectId, clientId, hashSecret(secret));
    await record(tx, {
      projectId,
      type: "client.secret_rotated",
      source: sourceOf(caller),
      target: { type: "client", id: clientId },
      changes: { client_secret: "changed" },
    });
    return (await findClient(tx, projectId, clientId))!;
  });
  await restampClientCutoff(sql, clientId);
  return { ...client, client_secret: secret };
}

/** `listClients`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
export function clientListRead(projectId: string, q: ClientListQuery): AttachedRead {
  return clientListStatement(projectId, q);
}

/** A page of the project's clients; from `attached` when the gate read it already. */
export async function listClients(
  sql: Sql,
  projectId: string,
  q: ClientListQuery,
  attached?: Attached,
): Promise<JsonText<PageOf<Client>>> {
  return await listPage<Client>(sql, clientListStatement(projectId, q), attached);
}

/** One client, as the list shows it (never its secret); the built-in console client is not one. */
export async function getClient(sql: Sql, projectId: string, clientId: string): Promise<Client> {
  const client = await retryRead(() => findClient(sql, projectId, clientId));
  if (!client) throw new AppError("client_not_found");
  return client;
}

/**
 * Deletes the client: its sessions end with it and its tokens are refused from the next request on. The
 * caller must cover the client's permissions. The project's admin client (no project may lock itself out)
 * and the built-in console client cannot be deleted: 403 `client_not_deletable`.
 */
export async function deleteClient(
  sql: Sql,
  caller: Principal,
  projectId: string,
  clientId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findClient(tx, projectId, clientId, { lock: true });
    if (!current) {
      if (clientId === consoleClientId(projectId)) throw new AppError("client_not_deletable");
      throw new AppError("client_not_found");
    }
    if (current.is_admin) throw new AppError("client_not_deletable");
    await requireActOn(tx, caller, current, "deleting this client");
    await endGrantsOf(tx, caller, projectId, { clientId }, { type: "client", id: clientId });
    await deleteClientRow(tx, projectId, clientId);
    await record(tx, {
      projectId,
      type: "client.deleted",
      source: sourceOf(caller),
      target: { type: "client", id: clientId },
      changes: diff(current, {}),
    });
  });
}

/**
 * Consent for third-party clients: before a code for a client that `needsConsent`, the user sees what the client
 * asks (its name and host, the API or the project, the permissions in plain words) and decides. A decision is kept
 * per user, client and API with the permissions granted; a request asking for more asks again. The check sits in
 * `mintAuthorizationCode` (domain/signin/codes.ts), so that no way to a code skips it.
 */
import type { Sql } from "../../db/connection.ts";
import { retryRead, transaction } from "../../db/connection.ts";
import {
  type ConsentHold,
  type ConsentRow,
  deleteConsent,
  findConsent,
  findConsentClient,
  findConsentResource,
  heldForConsent,
  holdForConsent,
  listUserConsents as listConsentRows,
  upsertConsent,
} from "../../db/signin/consents.ts";
import { targetOf } from "../oauth/resource_indicators.ts";
import { needsConsent } from "../oauth/clients.ts";
import { record, type Source, sourceOf } from "../audit/audit.ts";
import { findUser } from "../../db/accounts/users.ts";
import { requireCovered } from "../authz/coverage.ts";
import type { Principal } from "../shared/principal.ts";
import { newId } from "../shared/ids.ts";
import { AppError } from "../shared/errors.ts";
import { consumeAuthorizationRequest } from "../../db/oauth/sessions.ts";

/** A code was asked for a third-party client whose user has not (or not fully) consented yet. */
export class ConsentRequired extends Error {
  constructor(readonly userId: string) {
    super("the user has not consented to this client");
  }
}

/** What a code of this login would let the client do: the API (null: the project) and the permissions. */
export type Asked = {
  resource: { id: string; name: string } | null;
  permissions: { code: string; description: string | null }[];
};

/** OpenID scopes in plain words, asked of a request without an API. */
const OPENID_SCOPES: Record<string, string> = {
  openid: "Know who you are (your user ID) and that you signed in",
  profile: "See your name and picture",
  email: "See your email address",
};

/** The code's request, as the code carries it. */
type CodeRequest = {
  project_id: string;
  client_id: string;
  user_id: string;
  resource?: string | null;
  resource_scope?: string | null;
  scope?: string | null;
};

/**
 * What the request asks of the user: with `resource`, the permission codes of that API a token would carry (those
 * asked that the user holds, all held when none is named: domain/oauth/resource_indicators.ts); without, the
 * OpenID scopes of the request.
 */
export async function askedOf(sql: Sql, c: CodeRequest): Promise<Asked> {
  if (c.resource) {
    const target = await targetOf(sql, c.project_id, { userId: c.user_id }, c.resource, c.resource_scope);
    const resource = await findConsentResource(sql, c.project_id, c.resource);
    if (!resource) {
      throw new AppError("invalid_target", {
        description: "no API of this project has this resource indicator",
      });
    }
    const codes = new Set(target.scope.split(" ").filter((s) => s !== ""));
    return {
      resource: { id: resource.id, name: resource.name },
      permissions: resource.permissions.filter((p) => codes.has(p.code)),
    };
  }
  const scopes = [...new Set((c.scope ?? "").split(" ").filter((s) => s in OPENID_SCOPES))].sort();
  return { resource: null, permissions: scopes.map((code) => ({ code, description: OPENID_SCOPES[code] })) };
}

/** Whether a kept decision covers what is asked now. */
const covers = (granted: string[] | undefined, asked: Asked) =>
  granted !== undefined && asked.permissions.every((p) => granted.includes(p.code));

/**
 * Throws ConsentRequired unless the client needs none or the user's kept decision covers this request. Called in
 * the transaction that writes the code.
 */
export async function requireConsent(sql: Sql, c: CodeRequest): Promise<void> {
  const client = await findConsentClient(sql, c.project_id, c.client_id);
  if (!client) throw new ConsentRequired(c.user_id); // a client gone meanwhile gets no code
  if (!needsConsent(client)) return;
  const asked = await askedOf(sql, c);
  const granted = await findConsent(sql, {
    project_id: c.project_id,
    user_id: c.user_id,
    client_id: c.client_id,
    resource_id: asked.resource?.id ?? null,
  });
  if (!covers(granted, asked)) throw new ConsentRequired(c.user_id);
}

/** Holds a login page for the user's decision; the consent page posts against it. */
export async function holdLoginForConsent(sql: Sql, requestId: string, hold: ConsentHold): Promise<void> {
  await holdForConsent(sql, requestId, hold);
}

/** The user a login page waits on, or null. */
export async function consentHoldOf(sql: Sql, requestId: string): Promise<ConsentHold | null> {
  return (await heldForConsent(sql, requestId)) ?? null;
}

/**
 * The user's decision to allow what the page showed (`shown`, its permission codes): what is asked now and was
 * shown is kept, with earlier grants, and recorded as `consent.granted`. Anything asked now that the page did not
 * show (the user's role changed meanwhile) is not granted, so the code's check asks again.
 */
export async function grantConsent(
  sql: Sql,
  req: {
    project_id: string;
    client_id: string;
    resource: string | null;
    resource_scope: string | null;
    scope: string | null;
  },
  userId: string,
  shown: string[],
  source: Source,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const asked = await askedOf(tx, { ...req, user_id: userId });
    const permissions = asked.permissions.map((p) => p.code).filter((code) => shown.includes(code));
    const resourceId = asked.resource?.id ?? null;
    const kept = await upsertConsent(tx, {
      project_id: req.project_id,
      id: newId(),
      user_id: userId,
      client_id: req.client_id,
      resource_id: resourceId,
      permissions,
    });
    await record(tx, {
      projectId: req.project_id,
      type: "consent.granted",
      source,
      target: { type: "user", id: userId },
      details: { consent_id: kept.id, client_id: req.client_id, resource_id: resourceId, permissions },
    });
  });
}

/** The client's name and host, as the consent page shows them (`clientName`, `host`). */
export async function consentClientShown(
  sql: Sql,
  projectId: string,
  clientId: string,
  redirectUri: string,
): Promise<{ clientName: string; host: string }> {
  const client = await findConsentClient(sql, projectId, clientId);
  // A client of a metadata document is vouched for by the host of its document; any other by where the answer goes.
  const host = new URL(client?.metadata_url ?? redirectUri).host;
  return { clientName: client?.name ?? clientId, host };
}

/**
 * The user's decision to deny: the login request is spent (no code can follow from it) and `consent.denied`
 * recorded with it, in one transaction; false (and nothing recorded) if the request already was spent.
 */
export async function denyConsent(
  sql: Sql,
  req: { id: string; project_id: string; client_id: string; resource: string | null },
  userId: string,
  source: Source,
): Promise<boolean> {
  return await transaction(sql, async (tx) => {
    if (!(await consumeAuthorizationRequest(tx, req.id))) return false;
    await record(tx, {
      projectId: req.project_id,
      type: "consent.denied",
      source,
      target: { type: "user", id: userId },
      details: { client_id: req.client_id, resource: req.resource },
    });
    return true;
  });
}

export type Consent = ConsentRow;

/** A user's consents (the admin API; Connected apps on /account). 404 `user_not_found` for an unknown user. */
export async function listUserConsents(sql: Sql, projectId: string, userId: string): Promise<Consent[]> {
  return await retryRead(async () => {
    if (!(await findUser(sql, projectId, userId))) throw new AppError("user_not_found");
    return await listConsentRows(sql, projectId, userId);
  });
}

/**
 * Deletes a consent and ends the client's sessions of the user, its codes not yet exchanged too; recorded as
 * `consent.revoked`. 404 `consent_not_found` for another user's or project's.
 */
async function revokeOne(tx: Sql, projectId: string, userId: string, consentId: string, source: Source) {
  const gone = await deleteConsent(tx, projectId, userId, consentId);
  if (!gone) throw new AppError("consent_not_found");
  await record(tx, {
    projectId,
    type: "consent.revoked",
    source,
    target: { type: "user", id: userId },
    details: { consent_id: consentId, client_id: gone.client_id, resource_id: gone.resource_id },
  });
}

/** An admin revokes a user's consent: acting on the user, the caller must cover what the user holds (403). */
export async function revokeUserConsent(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  consentId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    await requireCovered(tx, caller, projectId, { userId }, "user_id", "revoking this user's consent", {
      nameCodes: false,
    });
    await revokeOne(tx, projectId, userId, consentId, sourceOf(caller));
  });
}

/** The user revokes their own consent (Connected apps on /account). */
export async function revokeOwnConsent(
  sql: Sql,
  projectId: string,
  userId: string,
  consentId: string,
  source: Source,
): Promise<void> {
  await transaction(sql, (tx) => revokeOne(tx, projectId, userId, consentId, source));
}

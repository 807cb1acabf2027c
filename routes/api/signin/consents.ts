/** A user's consents to third-party clients, for admins (`…/users/{user_id}/consents`). */
import { listUserConsents, revokeUserConsent } from "../../../domain/signin/consent.ts";
import { ConsentList, UserConsentParams } from "../../../openapi/consents.ts";
import { UserIdParam } from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";

export const listUserConsentsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}/consents",
  operationId: "listUserConsents",
  tags: ["Consents"],
  summary: "List a user's consents",
  permission: "users:read",
  description:
    "What the user allowed third-party clients (`third_party: true`) on the consent page: one per " +
    "client and API (or the project), with the permissions granted. Newest decision first.",
  request: { params: UserIdParam },
  responses: { 200: jsonResponse(ConsentList, "The user's consents") },
  errors: ["user_not_found"],
});

export const revokeUserConsentRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/consents/{consent_id}",
  operationId: "revokeUserConsent",
  tags: ["Consents"],
  summary: "Revoke one of a user's consents",
  permission: "users:update",
  description:
    "The client's sessions of the user end at once (their refresh tokens answer `invalid_grant`), " +
    "its codes not yet exchanged too, and its next login shows the consent page again; recorded as " +
    "`consent.revoked`. The caller must hold every permission the user holds, as for other changes of a user " +
    "(403 `insufficient_permission` otherwise).",
  request: { params: UserConsentParams },
  responses: { 204: { description: "Revoked" } },
  errors: ["user_not_found", "consent_not_found"],
});

export function registerConsentApiRoutes(app: App) {
  app.openapi(listUserConsentsRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json({ data: await listUserConsents(c.get("deps").sql, project_id, user_id) }, 200);
  });
  app.openapi(revokeUserConsentRoute, async (c) => {
    const { project_id, user_id, consent_id } = c.req.valid("param");
    await revokeUserConsent(c.get("deps").sql, c.get("principal"), project_id, user_id, consent_id);
    return c.body(null, 204) as never;
  });
}

/**
 * A client's SCIM tokens: `/api/v1/projects/{project_id}/clients/{client_id}/scim-tokens` (docs/provisioning.md
 * § The client and its token). The SCIM endpoints accept them (scim_edge.ts).
 */
import {
  ClientIdParam,
  CreateScimTokenRequest,
  ScimTokenList,
  ScimTokenParam,
  ScimTokenWithSecret,
} from "../../../openapi/clients.ts";
import {
  createScimToken,
  listClientScimTokens,
  MAX_SCIM_TOKENS,
  revokeScimToken,
} from "../../../domain/provisioning/scim_tokens.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";

export const createScimTokenRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/scim-tokens",
  operationId: "createScimToken",
  tags: ["Clients"],
  summary: "Make a SCIM token of a client",
  permission: "clients:update",
  description:
    "A long-lived bearer token for the project's SCIM endpoints (`/scim/v2/{project_id}/`) only, " +
    "for directories that send one fixed token (Entra ID's Secret Token, Okta's HTTP Header): shown once, " +
    "only its SHA-256 stored. It acts as the client, with the client's permissions at each request " +
    "(`scim:read`, `scim:write`), while the client and project are active; rotating the client's secret or " +
    "deactivating it refuses the tokens made before. The caller must cover the client's permissions (403), " +
    `as rotating its secret needs. At most ${MAX_SCIM_TOKENS} a client (400 \`invalid_params\`). One ` +
    "transaction with its `scim_token.created` event.",
  request: { params: ClientIdParam, body: jsonBody(CreateScimTokenRequest) },
  responses: { 201: jsonResponse(ScimTokenWithSecret, "The token, shown only now") },
  errors: ["client_not_found"],
});

export const listScimTokensRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/scim-tokens",
  operationId: "listScimTokens",
  tags: ["Clients"],
  summary: "List a client's SCIM tokens",
  permission: "clients:read",
  description: "The client's SCIM tokens, the newest first, with when each expires and was last used; " +
    "never the tokens themselves.",
  request: { params: ClientIdParam },
  responses: { 200: jsonResponse(ScimTokenList, "The client's SCIM tokens") },
  errors: ["client_not_found"],
});

export const revokeScimTokenRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/scim-tokens/{token_id}",
  operationId: "revokeScimToken",
  tags: ["Clients"],
  summary: "Revoke a SCIM token",
  permission: "clients:update",
  description: "The next SCIM request with it is refused (401). The caller must cover the client's " +
    "permissions (403). One transaction with its `scim_token.revoked` event.",
  request: { params: ScimTokenParam },
  responses: { 204: { description: "Revoked" } },
  errors: ["client_not_found", "scim_token_not_found"],
});

export function registerScimTokenRoutes(app: App) {
  app.openapi(createScimTokenRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(
      await createScimToken(
        c.get("deps").sql,
        c.get("principal"),
        project_id,
        client_id,
        c.req.valid("json"),
      ),
      201,
    );
  });
  app.openapi(listScimTokensRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(await listClientScimTokens(c.get("deps").sql, project_id, client_id), 200);
  });
  app.openapi(revokeScimTokenRoute, async (c) => {
    const { project_id, client_id, token_id } = c.req.valid("param");
    await revokeScimToken(c.get("deps").sql, c.get("principal"), project_id, client_id, token_id);
    return c.body(null, 204) as never;
  });
}

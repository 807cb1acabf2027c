/** Machine clients: `/api/v1/projects/{project_id}/clients` and secret rotation. */
import {
  clientListRead,
  createClient,
  deleteClient,
  getClient,
  listClients,
  rotateClientSecret,
  updateClient,
} from "../../../domain/oauth/clients.ts";
import {
  Client,
  ClientIdParam,
  ClientListQuery,
  ClientWithSecret,
  CreateClientRequest,
  UpdateClientRequest,
} from "../../../openapi/clients.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

export const createClientRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients",
  operationId: "createClient",
  tags: ["Clients"],
  summary: "Create a client",
  permission: "clients:create",
  description:
    "The answer carries the client's 256-bit secret, shown only here; it authenticates with HTTP " +
    "Basic at `POST /api/v1/tokens` (client credentials). The caller grants only permissions it holds itself " +
    "(the project's admin client holds them all): otherwise 403 `insufficient_permission`, `details` naming " +
    "the codes it lacks, and nothing is written. `redirect_uris` and `post_logout_redirect_uris` give the " +
    "client lists of its own, used instead of the project's (empty or omitted: the project's apply); they " +
    "decide where its users' codes go, so giving them needs a caller that covers the whole project (403 " +
    "`insufficient_permission` otherwise), and each URI is checked as the project's are (400 `invalid_params` " +
    "with `details`).",
  request: { params: ProjectIdParam, body: jsonBody(CreateClientRequest) },
  responses: { 201: jsonResponse(ClientWithSecret, "The client with its secret") },
  errors: ["some_permissions_not_found"],
});

export const updateClientRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/clients/{client_id}",
  operationId: "updateClient",
  tags: ["Clients"],
  summary: "Update a client",
  permission: "clients:update",
  description: "Permission changes and deactivation apply to the client's tokens on their next request; " +
    "deactivation also ends the sessions of users who signed in through it. The caller must hold every " +
    "permission the client holds and every permission it grants (403 `insufficient_permission` otherwise); a " +
    "project's admin client can be changed only by itself and by the system project's admin client, and can " +
    "be neither deactivated nor stripped of permissions. A client's own `redirect_uris` and " +
    "`post_logout_redirect_uris` replace the project's for it while non-empty; `[]` falls back to the " +
    "project's. Changing them needs a caller that covers the whole project, as the project's lists do.",
  request: { params: ClientIdParam, body: jsonBody(UpdateClientRequest) },
  responses: { 200: jsonResponse(Client, "The updated client") },
  errors: ["some_permissions_not_found", "client_not_found"],
});

export const listClientsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/clients",
  operationId: "listClients",
  tags: ["Clients"],
  summary: "List clients",
  permission: "clients:read",
  description: "`search` matches the name. Secrets are never listed.",
  request: { params: ProjectIdParam, query: ClientListQuery },
  responses: { 200: jsonResponse(listOf(Client, "ClientList"), "A page of clients") },
  reads: ({ param, query }) => clientListRead(param.project_id as string, query as ClientListQuery),
});

export const rotateClientSecretRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/secret",
  operationId: "rotateClientSecret",
  tags: ["Clients"],
  summary: "Rotate a client's secret",
  permission: "clients:update",
  description: "Generates a new 256-bit secret; the old one stops working at once, and so do the access " +
    "tokens issued before. The secret is stored only as a hash and is shown in this answer only. A client may " +
    "rotate its own secret; any other caller must hold every permission the client holds (a project's admin " +
    "client: only itself and the system project's admin client), else 403 `insufficient_permission`.",
  request: { params: ClientIdParam },
  responses: { 200: jsonResponse(ClientWithSecret, "The client with its new secret") },
  errors: ["client_not_found"],
});

export const getClientRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/clients/{client_id}",
  operationId: "getClient",
  tags: ["Clients"],
  summary: "Get a client",
  permission: "clients:read",
  description:
    "The client as the list shows it, never its secret. An unknown id, another project's, or the " +
    "built-in console client's is `client_not_found`.",
  request: { params: ClientIdParam },
  responses: { 200: jsonResponse(Client, "The client") },
  errors: ["client_not_found"],
});

export const deleteClientRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/clients/{client_id}",
  operationId: "deleteClient",
  tags: ["Clients"],
  summary: "Delete a client",
  permission: "clients:delete",
  description:
    "Its tokens are refused from the next request on and its sessions end. The caller must cover " +
    "the client's permissions (403 `insufficient_permission` otherwise). The project's admin client and the " +
    "built-in console client cannot be deleted: 403 `client_not_deletable`. One transaction with its " +
    "`client.deleted` audit event (the client's last state, never a secret) and one `grant.deleted` per grant " +
    "on objects it ends (`details.cause`); answers 204.",
  request: { params: ClientIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["client_not_found", "client_not_deletable"],
});

export function registerClientRoutes(app: App) {
  app.openapi(getClientRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(await getClient(c.get("deps").sql, project_id, client_id), 200);
  });
  app.openapi(deleteClientRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    await deleteClient(c.get("deps").sql, c.get("principal"), project_id, client_id);
    return c.body(null, 204) as never;
  });
  app.openapi(createClientRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await createClient(c.get("deps").sql, c.get("principal"), project_id, c.req.valid("json")),
      201,
    );
  });
  app.openapi(updateClientRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(
      await updateClient(c.get("deps").sql, c.get("principal"), project_id, client_id, c.req.valid("json")),
      200,
    );
  });
  app.openapi(listClientsRoute, async (c) => {
    return jsonText(
      c,
      await listClients(
        c.get("deps").sql,
        c.req.valid("param").project_id,
        c.req.valid("query"),
        c.get("attached"),
      ),
      200,
    );
  });
  app.openapi(rotateClientSecretRoute, async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(
      await rotateClientSecret(c.get("deps").sql, c.get("principal"), project_id, client_id),
      200,
    );
  });
}

/** Machine clients: `/api/v1/projects/{project_id}/clients` and secret rotation. */
import { createRoute, z } from "@hono/zod-openapi";
import { createClient, listClients, rotateClientSecret, updateClient } from "../domain/clients.ts";
import { type App, type Deps, guarded } from "./app.ts";
import {
  booleanFilter,
  Description,
  errorResponses,
  Id,
  jsonBody,
  jsonResponse,
  listOf,
  listQuery,
  Name,
  PermissionIds,
  ProjectIdParam,
  Timestamps,
} from "../openapi/schemas.ts";

export const Client = z.object({
  id: z.string().openapi({ description: "The client_id" }),
  project_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  is_active: z.boolean(),
  is_admin: z.boolean().openapi({
    description:
      "The project's admin client: it cannot be deactivated or lose permissions; rotate its secret instead",
  }),
  permission_ids: z.array(z.string()).openapi({ description: "Permissions granted directly to the client" }),
  ...Timestamps,
}).openapi("Client");

const ClientWithSecret = Client.extend({
  client_secret: z.string().openapi({ description: "Shown only in this answer; store it now." }),
}).openapi("ClientWithSecret");

const CreateClientBody = z.object({
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
}).openapi("CreateClientRequest");

const UpdateClientBody = z.object({
  name: Name,
  is_active: z.boolean().openapi({
    description: "false refuses the client's tokens from the next request on",
  }),
  description: Description,
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the client's permissions.",
  }),
}).openapi("UpdateClientRequest");

const ClientIdParam = ProjectIdParam.extend({
  client_id: Id.openapi({ param: { name: "client_id", in: "path" } }),
});

const clientErrors = [
  "invalid_params",
  "invalid_authorization_token",
  "insufficient_permission",
  "project_not_found",
  "some_permissions_not_found",
] as const;

export const createClientRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients",
  operationId: "createClient",
  tags: ["Clients"],
  summary: "Create a client",
  description:
    "Needs `clients:create`. The answer carries the client's 256-bit secret, shown only here; it " +
    "authenticates with HTTP Basic at `POST /api/v1/tokens` (client credentials).",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam, body: jsonBody(CreateClientBody) },
  responses: {
    201: jsonResponse(ClientWithSecret, "The client with its secret"),
    ...errorResponses(...clientErrors),
  },
});

export const updateClientRoute = createRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/clients/{client_id}",
  operationId: "updateClient",
  tags: ["Clients"],
  summary: "Update a client",
  description:
    "Needs `clients:update`. Permission changes and deactivation apply to the client's tokens on " +
    "their next request. The system project's admin client cannot be deactivated or lose permissions.",
  security: [{ bearerAuth: [] }],
  request: { params: ClientIdParam, body: jsonBody(UpdateClientBody) },
  responses: {
    200: jsonResponse(Client, "The updated client"),
    ...errorResponses(...clientErrors, "client_not_found"),
  },
});

export const listClientsRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/clients",
  operationId: "listClients",
  tags: ["Clients"],
  summary: "List clients",
  description: "Needs `clients:read`. `search` matches the name. Secrets are never listed.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam,
    query: listQuery(["name", "is_active", "created_at", "updated_at"] as const).extend({
      is_active: booleanFilter("Only active (true) or inactive (false) clients"),
    }),
  },
  responses: {
    200: jsonResponse(listOf(Client, "ClientList"), "A page of clients"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
    ),
  },
});

export const rotateClientSecretRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/secret",
  operationId: "rotateClientSecret",
  tags: ["Clients"],
  summary: "Rotate a client's secret",
  description: "Needs `clients:update`. Generates a new 256-bit secret; the old one stops working at once. " +
    "The secret is stored only as a hash and is shown in this answer only.",
  security: [{ bearerAuth: [] }],
  request: { params: ClientIdParam },
  responses: {
    200: jsonResponse(ClientWithSecret, "The client with its new secret"),
    ...errorResponses(
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
      "client_not_found",
    ),
  },
});

export function registerClientRoutes(app: App, deps: Deps) {
  app.openapi(guarded(deps, createClientRoute, "clients:create"), async (c) => {
    return c.json(await createClient(deps.sql, c.req.valid("param").project_id, c.req.valid("json")), 201);
  });
  app.openapi(guarded(deps, updateClientRoute, "clients:update"), async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(await updateClient(deps.sql, project_id, client_id, c.req.valid("json")), 200);
  });
  app.openapi(guarded(deps, listClientsRoute, "clients:read"), async (c) => {
    return c.json(await listClients(deps.sql, c.req.valid("param").project_id, c.req.valid("query")), 200);
  });
  app.openapi(guarded(deps, rotateClientSecretRoute, "clients:update"), async (c) => {
    const { project_id, client_id } = c.req.valid("param");
    return c.json(await rotateClientSecret(deps.sql, project_id, client_id), 200);
  });
}

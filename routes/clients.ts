/** Machine clients: secret rotation (the rest of the clients API comes with the administrative API). */
import { createRoute, z } from "@hono/zod-openapi";
import { rotateClientSecret } from "../domain/clients.ts";
import { type App, type Deps, requirePermission } from "./app.ts";
import { errorResponses, Id, jsonResponse, ProjectIdParam, Timestamps } from "../openapi/schemas.ts";

export const Client = z.object({
  id: z.string().openapi({ description: "The client_id" }),
  project_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  is_active: z.boolean(),
  permission_ids: z.array(z.string()).openapi({ description: "Permissions granted directly to the client" }),
  ...Timestamps,
}).openapi("Client");

const ClientWithSecret = Client.extend({
  client_secret: z.string().openapi({ description: "Shown only in this answer; store it now." }),
}).openapi("ClientWithSecret");

export const rotateClientSecretRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/clients/{client_id}/secret",
  operationId: "rotateClientSecret",
  tags: ["Clients"],
  summary: "Rotate a client's secret",
  description: "Needs `clients:update`. Generates a new 256-bit secret; the old one stops working at once. " +
    "The secret is stored only as a hash and is shown in this answer only.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam.extend({ client_id: Id.openapi({ param: { name: "client_id", in: "path" } }) }),
  },
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
  app.openapi(
    { ...rotateClientSecretRoute, middleware: [requirePermission(deps, "clients:update", "own")] as const },
    async (c) => {
      const { project_id, client_id } = c.req.valid("param");
      return c.json(await rotateClientSecret(deps.sql, project_id, client_id), 200);
    },
  );
}

/** A machine client of a project: its secret is shown once; it holds permissions directly. */
import { z } from "@hono/zod-openapi";
import {
  booleanFilter,
  Description,
  Id,
  listQuery,
  Name,
  PermissionIds,
  ProjectIdParam,
  Timestamps,
} from "./fields.ts";

export const TokenEndpointAuthMethod = z.enum(["none", "client_secret_basic"]).openapi({
  description:
    "How the client authenticates at the token endpoint (RFC 7591): `none`, a public client that " +
    "names itself with `client_id` and proves the login with PKCE (the default), or `client_secret_basic`, a " +
    "confidential client that sends HTTP Basic with every grant, and may then leave `client_id` out of the form " +
    "(without Basic: 401 `invalid_client`, `error_code` `invalid_client_credentials`). " +
    "Client credentials always need HTTP Basic. Default `none`; omitted on update: unchanged.",
}).openapi("TokenEndpointAuthMethod");
export type TokenEndpointAuthMethod = z.infer<typeof TokenEndpointAuthMethod>;

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
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  permission_ids: z.array(z.string()).openapi({ description: "Permissions granted directly to the client" }),
  ...Timestamps,
}).openapi("Client");
export type Client = z.infer<typeof Client>;

export const ClientWithSecret = Client.extend({
  client_secret: z.string().openapi({ description: "Shown only in this answer; store it now." }),
}).openapi("ClientWithSecret");
export type ClientWithSecret = z.infer<typeof ClientWithSecret>;

export const CreateClientRequest = z.strictObject({
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
  token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
}).openapi("CreateClientRequest");
export type CreateClientRequest = z.infer<typeof CreateClientRequest>;

export const UpdateClientRequest = z.strictObject({
  name: Name,
  is_active: z.boolean().openapi({
    description: "false refuses the client's tokens from the next request on",
  }),
  description: Description,
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the client's permissions.",
  }),
  token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
}).openapi("UpdateClientRequest");
export type UpdateClientRequest = z.infer<typeof UpdateClientRequest>;

export const ClientIdParam = ProjectIdParam.extend({
  client_id: Id.openapi({ param: { name: "client_id", in: "path" } }),
});

export const ClientListQuery = listQuery(["name", "is_active", "created_at", "updated_at"] as const).extend({
  is_active: booleanFilter("Only active (true) or inactive (false) clients"),
});
export type ClientListQuery = z.infer<typeof ClientListQuery>;

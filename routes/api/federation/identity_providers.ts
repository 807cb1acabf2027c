/**
 * Identity providers: `/api/v1/projects/{project_id}/identity-providers`, and a user's linked identities:
 * `/api/v1/projects/{project_id}/users/{user_id}/identities`.
 */
import {
  createProvider,
  deleteProvider,
  getProvider,
  listProviders,
  updateProvider,
} from "../../../domain/federation/identity_providers.ts";
import {
  linkIdentity,
  listCurrentIdentities,
  listUserIdentities,
  unlinkCurrentIdentity,
  unlinkIdentity,
} from "../../../domain/accounts/identities.ts";
import { Id } from "../../../openapi/fields.ts";
import { z } from "@hono/zod-openapi";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateIdentityProviderRequest,
  ExternalIdentity,
  ExternalIdentityList,
  IdentityParam,
  IdentityProvider,
  IdentityProviderIdParam,
  IdentityProviderListQuery,
  LinkIdentityRequest,
  UpdateIdentityProviderRequest,
  UserIdParam,
} from "../../../openapi/identity_providers.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";
import { providerSettings } from "../../settings.ts";

const MANAGING =
  "Reserved to a caller that covers every permission of the project (its admin client, or an " +
  "operator): a provider decides who signs in as which user.";

export const createIdentityProviderRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/identity-providers",
  operationId: "createIdentityProvider",
  tags: ["IdentityProviders"],
  summary: "Add an upstream identity provider",
  permission: "identity_providers:create",
  description:
    "An OpenID Connect provider whose users sign in with a button on the login page. Its discovery " +
    "document is fetched and validated now (its `issuer` must equal `issuer` exactly); a failure answers " +
    "`invalid_params` on `issuer` saying why. Register the answer's `redirect_uri` at the provider. " +
    MANAGING,
  request: { params: ProjectIdParam, body: jsonBody(CreateIdentityProviderRequest) },
  responses: { 201: jsonResponse(IdentityProvider, "The provider (never its client secret)") },
});

export const listIdentityProvidersRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/identity-providers",
  operationId: "listIdentityProviders",
  tags: ["IdentityProviders"],
  summary: "List identity providers",
  permission: "identity_providers:read",
  description: "`search` matches the display name and the issuer.",
  request: { params: ProjectIdParam, query: IdentityProviderListQuery },
  responses: { 200: jsonResponse(listOf(IdentityProvider, "IdentityProviderList"), "A page of providers") },
});

export const getIdentityProviderRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/identity-providers/{provider_id}",
  operationId: "getIdentityProvider",
  tags: ["IdentityProviders"],
  summary: "Get an identity provider",
  permission: "identity_providers:read",
  request: { params: IdentityProviderIdParam },
  responses: { 200: jsonResponse(IdentityProvider, "The provider") },
  errors: ["identity_provider_not_found"],
});

export const updateIdentityProviderRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/identity-providers/{provider_id}",
  operationId: "updateIdentityProvider",
  tags: ["IdentityProviders"],
  summary: "Update an identity provider",
  permission: "identity_providers:update",
  description: "The discovery document is fetched and validated again. `client_secret` omitted keeps the " +
    "secret. " + MANAGING,
  request: { params: IdentityProviderIdParam, body: jsonBody(UpdateIdentityProviderRequest) },
  responses: { 200: jsonResponse(IdentityProvider, "The updated provider") },
  errors: ["identity_provider_not_found"],
});

export const deleteIdentityProviderRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/identity-providers/{provider_id}",
  operationId: "deleteIdentityProvider",
  tags: ["IdentityProviders"],
  summary: "Delete an identity provider",
  permission: "identity_providers:delete",
  description: "The identities linked through it go with it; users keep their other ways to sign in.",
  request: { params: IdentityProviderIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["identity_provider_not_found"],
});

export const listUserIdentitiesRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}/identities",
  operationId: "listUserIdentities",
  tags: ["IdentityProviders"],
  summary: "A user's linked identities",
  permission: "users:read",
  request: { params: UserIdParam },
  responses: { 200: jsonResponse(ExternalIdentityList, "The user's identities at upstream providers") },
  errors: ["user_not_found"],
});

export const linkUserIdentityRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users/{user_id}/identities",
  operationId: "linkUserIdentity",
  tags: ["IdentityProviders"],
  summary: "Link an upstream identity to a user",
  permission: "users:update",
  description:
    "Pre-links the upstream account (`provider_id`, its `sub` as `subject`): its first sign-in is " +
    "this user. The caller must cover the user's permissions. One identity per user and provider.",
  request: { params: UserIdParam, body: jsonBody(LinkIdentityRequest) },
  responses: { 201: jsonResponse(ExternalIdentity, "The linked identity") },
  errors: ["user_not_found", "identity_provider_not_found", "identity_already_linked"],
});

export const unlinkUserIdentityRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/identities/{provider_id}",
  operationId: "unlinkUserIdentity",
  tags: ["IdentityProviders"],
  summary: "Unlink a user's identity",
  permission: "users:update",
  description:
    "Refused with `last_sign_in_method` when it is the user's only way to sign in (no password, no " +
    "other identity). The caller must cover the user's permissions.",
  request: { params: IdentityParam },
  responses: { 204: { description: "Unlinked" } },
  errors: ["user_not_found", "identity_not_found", "last_sign_in_method"],
});

export const listCurrentUserIdentitiesRoute = guardedRoute({
  method: "get",
  path: "/api/v1/users/current/identities",
  operationId: "listCurrentUserIdentities",
  tags: ["IdentityProviders"],
  summary: "The current user's linked identities",
  permission: null,
  description: "A user's token: the identity providers the user signs in with.",
  request: {},
  responses: { 200: jsonResponse(ExternalIdentityList, "The user's identities at upstream providers") },
  errors: ["user_not_found"],
});

export const unlinkCurrentUserIdentityRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/users/current/identities/{provider_id}",
  operationId: "unlinkCurrentUserIdentity",
  tags: ["IdentityProviders"],
  summary: "Unlink one of the current user's identities",
  permission: null,
  description:
    "A user's token. Refused with `last_sign_in_method` when it is the user's only way to sign in.",
  request: { params: z.object({ provider_id: Id.openapi({ param: { name: "provider_id", in: "path" } }) }) },
  responses: { 204: { description: "Unlinked" } },
  errors: ["user_not_found", "identity_not_found", "last_sign_in_method"],
});

export function registerIdentityProviderRoutes(app: App) {
  app.openapi(listCurrentUserIdentitiesRoute, async (c) => {
    return c.json(await listCurrentIdentities(c.get("deps").sql, c.get("principal")), 200);
  });
  app.openapi(unlinkCurrentUserIdentityRoute, async (c) => {
    await unlinkCurrentIdentity(c.get("deps").sql, c.get("principal"), c.req.valid("param").provider_id);
    return c.body(null, 204) as never;
  });
  app.openapi(createIdentityProviderRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const s = providerSettings(c.get("deps"));
    return c.json(
      await createProvider(c.get("deps").sql, s, c.get("principal"), project_id, c.req.valid("json")),
      201,
    );
  });
  app.openapi(listIdentityProvidersRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const s = providerSettings(c.get("deps"));
    return c.json(await listProviders(c.get("deps").sql, s, project_id, c.req.valid("query")), 200);
  });
  app.openapi(getIdentityProviderRoute, async (c) => {
    const { project_id, provider_id } = c.req.valid("param");
    return c.json(
      await getProvider(c.get("deps").sql, providerSettings(c.get("deps")), project_id, provider_id),
      200,
    );
  });
  app.openapi(updateIdentityProviderRoute, async (c) => {
    const { project_id, provider_id } = c.req.valid("param");
    const s = providerSettings(c.get("deps"));
    const body = c.req.valid("json");
    return c.json(
      await updateProvider(c.get("deps").sql, s, c.get("principal"), project_id, provider_id, body),
      200,
    );
  });
  app.openapi(deleteIdentityProviderRoute, async (c) => {
    const { project_id, provider_id } = c.req.valid("param");
    await deleteProvider(c.get("deps").sql, c.get("principal"), project_id, provider_id);
    return c.body(null, 204) as never;
  });
  app.openapi(listUserIdentitiesRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(await listUserIdentities(c.get("deps").sql, project_id, user_id), 200);
  });
  app.openapi(linkUserIdentityRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    const body = c.req.valid("json");
    return c.json(await linkIdentity(c.get("deps").sql, c.get("principal"), project_id, user_id, body), 201);
  });
  app.openapi(unlinkUserIdentityRoute, async (c) => {
    const { project_id, user_id, provider_id } = c.req.valid("param");
    await unlinkIdentity(c.get("deps").sql, c.get("principal"), project_id, user_id, provider_id);
    return c.body(null, 204) as never;
  });
}

/** SCIM Users at /scim/v2/{project_id}/Users (RFC 7644 §3): list with filters, read, create, replace, patch, delete. */
import type { App } from "../../env.ts";
import { linkSettings } from "../../settings.ts";
import {
  createScimUser,
  deleteScimUser,
  getUser,
  listUsers,
  patchScimUser,
  replaceScimUser,
} from "../../../domain/provisioning/scim_users.ts";
import { versionMatches } from "../../../domain/provisioning/scim_versions.ts";
import { listParams, scimBody, scimJson, scimOperation } from "./scim_edge.ts";

export function registerScimUserRoutes(app: App): void {
  app.get(
    "/scim/v2/:project_id/Users",
    scimOperation(
      "scim:read",
      async ({ c, projectId, base }) =>
        scimJson(c, await listUsers(c.get("deps").sql, projectId, base, listParams(c))),
    ),
  );
  app.get(
    "/scim/v2/:project_id/Users/:id",
    scimOperation("scim:read", async ({ c, projectId, base, id }) => {
      const { resource, etag } = await getUser(
        c.get("deps").sql,
        projectId,
        base,
        id,
        listParams(c),
      );
      if (versionMatches(c.req.header("if-none-match"), etag)) {
        return new Response(null, { status: 304, headers: { etag } });
      }
      return scimJson(c, resource, 200, { etag });
    }),
  );
  app.post(
    "/scim/v2/:project_id/Users",
    scimOperation("scim:write", async ({ c, caller, projectId, base }) => {
      const body = await scimBody(c);
      const { resource, etag } = await createScimUser(c.get("deps").sql, caller, projectId, base, body);
      const location = (resource.meta as { location: string }).location;
      return scimJson(c, resource, 201, { etag, location });
    }),
  );
  app.put(
    "/scim/v2/:project_id/Users/:id",
    scimOperation("scim:write", async ({ c, caller, projectId, base, id }) => {
      const body = await scimBody(c);
      const { resource, etag } = await replaceScimUser(
        c.get("deps").sql,
        caller,
        projectId,
        base,
        id,
        body,
        c.req.header("if-match"),
        linkSettings(c),
      );
      return scimJson(c, resource, 200, { etag });
    }),
  );
  app.patch(
    "/scim/v2/:project_id/Users/:id",
    scimOperation("scim:write", async ({ c, caller, projectId, base, id }) => {
      const body = await scimBody(c);
      const { resource, etag } = await patchScimUser(
        c.get("deps").sql,
        caller,
        projectId,
        base,
        id,
        body,
        c.req.header("if-match"),
        linkSettings(c),
      );
      return scimJson(c, resource, 200, { etag });
    }),
  );
  app.delete(
    "/scim/v2/:project_id/Users/:id",
    scimOperation("scim:write", async ({ c, caller, projectId, id }) => {
      await deleteScimUser(c.get("deps").sql, caller, projectId, id, c.req.header("if-match"));
      return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
    }),
  );
}

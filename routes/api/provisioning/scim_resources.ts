/**
 * SCIM Users and Groups at /scim/v2/{project_id}/Users and …/Groups (RFC 7644 §3): list with filters, read,
 * create, replace, patch, delete. One set of routes for both: each resource type gives its domain's operations.
 */
import type { Sql } from "../../../domain/shared/database.ts";
import type { LinkSettings } from "../../../domain/accounts/account_links.ts";
import type { ListParams } from "../../../domain/provisioning/scim_query.ts";
import {
  createScimGroup,
  deleteScimGroup,
  getGroup,
  listGroups,
  patchScimGroup,
  replaceScimGroup,
} from "../../../domain/provisioning/scim_groups.ts";
import {
  createScimUser,
  deleteScimUser,
  getUser,
  listUsers,
  patchScimUser,
  replaceScimUser,
} from "../../../domain/provisioning/scim_users.ts";
import { type Versioned, versionMatches } from "../../../domain/provisioning/scim_versions.ts";
import type { Principal } from "../../../domain/shared/principal.ts";
import type { App } from "../../env.ts";
import { linkSettings } from "../../settings.ts";
import { listParams, scimBody, scimJson, scimOperation } from "./scim_edge.ts";

type Change = (
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  body: unknown,
  ifMatch: string | undefined,
  mail: LinkSettings,
) => Promise<Versioned>;

/** What a resource type's domain does for each operation (the mail settings reach those that mail). */
type ResourceOps = {
  list(sql: Sql, projectId: string, base: string, params: ListParams): Promise<unknown>;
  get(sql: Sql, projectId: string, base: string, id: string, params: ListParams): Promise<Versioned>;
  create(sql: Sql, caller: Principal, projectId: string, base: string, body: unknown): Promise<Versioned>;
  replace: Change;
  patch: Change;
  remove(
    sql: Sql,
    caller: Principal,
    projectId: string,
    id: string,
    ifMatch: string | undefined,
  ): Promise<void>;
};

const RESOURCES: Record<"Users" | "Groups", ResourceOps> = {
  Users: {
    list: listUsers,
    get: getUser,
    create: createScimUser,
    replace: replaceScimUser,
    patch: patchScimUser,
    remove: deleteScimUser,
  },
  Groups: {
    list: listGroups,
    get: getGroup,
    create: createScimGroup,
    replace: replaceScimGroup,
    patch: patchScimGroup,
    remove: deleteScimGroup,
  },
};

export function registerScimResourceRoutes(app: App): void {
  for (const [endpoint, ops] of Object.entries(RESOURCES)) {
    const path = `/scim/v2/:project_id/${endpoint}`;
    app.get(
      path,
      scimOperation(
        "scim:read",
        async ({ c, projectId, base }) =>
          scimJson(c, await ops.list(c.get("deps").sql, projectId, base, listParams(c))),
      ),
    );
    app.get(
      `${path}/:id`,
      scimOperation("scim:read", async ({ c, projectId, base, id }) => {
        const { resource, etag } = await ops.get(c.get("deps").sql, projectId, base, id, listParams(c));
        if (versionMatches(c.req.header("if-none-match"), etag)) {
          return new Response(null, { status: 304, headers: { etag } });
        }
        return scimJson(c, resource, 200, { etag });
      }),
    );
    app.post(
      path,
      scimOperation("scim:write", async ({ c, caller, projectId, base }) => {
        const body = await scimBody(c);
        const { resource, etag } = await ops.create(c.get("deps").sql, caller, projectId, base, body);
        const location = (resource.meta as { location: string }).location;
        return scimJson(c, resource, 201, { etag, location });
      }),
    );
    for (const [method, change] of [["put", ops.replace], ["patch", ops.patch]] as const) {
      app[method](
        `${path}/:id`,
        scimOperation("scim:write", async ({ c, caller, projectId, base, id }) => {
          const body = await scimBody(c);
          const { resource, etag } = await change(
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
    }
    app.delete(
      `${path}/:id`,
      scimOperation("scim:write", async ({ c, caller, projectId, id }) => {
        await ops.remove(c.get("deps").sql, caller, projectId, id, c.req.header("if-match"));
        return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
      }),
    );
  }
}

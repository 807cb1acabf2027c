/** Objects of a resource: `/api/v1/projects/{project_id}/resources/{resource_id}/objects`. */
import {
  createObjects,
  deleteObject,
  getObject,
  listObjects,
  updateObject,
} from "../../../domain/authz/objects.ts";
import { listOf } from "../../../openapi/fields.ts";
import {
  CreatedObjects,
  CreateObjectRequest,
  CreateObjectsRequest,
  DeleteObjectQuery,
  MAX_OBJECT_BATCH,
  ObjectIdParam,
  ObjectListQuery,
  ObjectRecord,
  UpdateObjectRequest,
} from "../../../openapi/objects.ts";
import { ResourceIdParam } from "../../../openapi/resources.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

const HIERARCHY = "`parent_id` names an object of the same resource (another resource's, or none, is 400 " +
  "`invalid_params`); no cycles, at most 32 levels. `organization_id` names an organization of the project " +
  "(else 400 `invalid_params`). Default resources have no objects (403 `default_resource_immutable`).";

export const createObjectRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects",
  operationId: "createObject",
  tags: ["Objects"],
  summary: "Register an object of a resource",
  permission: "objects:create",
  description:
    `The application's own id, unique in the resource (409 \`object_already_exists\`). ${HIERARCHY} ` +
    "One transaction with its `object.created` event.",
  request: { params: ResourceIdParam, body: jsonBody(CreateObjectRequest) },
  responses: { 201: jsonResponse(ObjectRecord, "The object") },
  errors: ["resource_not_found", "default_resource_immutable", "object_already_exists"],
});

export const createObjectsRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects/batch",
  operationId: "createObjects",
  tags: ["Objects"],
  summary: "Register many objects at once",
  permission: "objects:create",
  description: `1 to ${MAX_OBJECT_BATCH} objects, all or none: any bad item refuses the whole batch, ` +
    "`details` naming the items (`objects.<index>.<field>`). A parent may be an existing object or one of " +
    `the batch, in any order. ${HIERARCHY} One transaction with one \`object.created\` event (\`details.count\`).`,
  request: { params: ResourceIdParam, body: jsonBody(CreateObjectsRequest) },
  responses: { 201: jsonResponse(CreatedObjects, "The objects, in the request's order") },
  errors: ["resource_not_found", "default_resource_immutable", "object_already_exists"],
});

export const listObjectsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects",
  operationId: "listObjects",
  tags: ["Objects"],
  summary: "List a resource's objects",
  permission: "objects:read",
  description: "`search` matches the id and the name; `parent_id` lists one object's children, " +
    "`top_level=true` the objects without parent (the roots of the tree), `organization_id` the objects of " +
    "one organization.",
  request: { params: ResourceIdParam, query: ObjectListQuery },
  responses: { 200: jsonResponse(listOf(ObjectRecord, "ObjectList"), "A page of objects") },
  errors: ["resource_not_found"],
});

export const getObjectRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects/{object_id}",
  operationId: "getObject",
  tags: ["Objects"],
  summary: "Get an object",
  permission: "objects:read",
  description: "An id with `/` is sent percent-encoded in the path (`%2F`).",
  request: { params: ObjectIdParam },
  responses: { 200: jsonResponse(ObjectRecord, "The object") },
  errors: ["resource_not_found", "object_not_found"],
});

export const updateObjectRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects/{object_id}",
  operationId: "updateObject",
  tags: ["Objects"],
  summary: "Rename, move or reassign an object",
  permission: "objects:update",
  description: "A move takes the object's descendants (and what grants on it give) along; never under " +
    `itself or a descendant (400), never deeper than 32 levels for any of them (400). ${HIERARCHY} ` +
    "A move never widens access silently: when grants on the new parent or its ancestors would reach the " +
    "object (and its descendants) that did not before, the caller needs what creating them would need, " +
    "`grants:create` and every permission each such grant's role holds on the resource; otherwise 403 " +
    "`insufficient_permission`, `details` on `parent_id` naming what it lacks. One transaction with its " +
    "`object.updated` event, whose `details.grants_now_reaching` lists those grants (`id`, `subject`, " +
    "`role_id`, `object_id`; up to 1,000, `grants_now_reaching_count` when more).",
  request: { params: ObjectIdParam, body: jsonBody(UpdateObjectRequest) },
  responses: { 200: jsonResponse(ObjectRecord, "The updated object") },
  errors: ["resource_not_found", "default_resource_immutable", "object_not_found"],
});

export const deleteObjectRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}/objects/{object_id}",
  operationId: "deleteObject",
  tags: ["Objects"],
  summary: "Delete an object",
  permission: "objects:delete",
  description: "Its grants go with it. An object with children is refused (409 `object_has_children`) " +
    "unless `cascade=true`, which deletes its whole subtree and the grants on it. One transaction with its " +
    "`object.deleted` event and one `grant.deleted` per grant it ends (`details.cause`); answers 204.",
  request: { params: ObjectIdParam, query: DeleteObjectQuery },
  responses: { 204: { description: "Deleted" } },
  errors: ["resource_not_found", "default_resource_immutable", "object_not_found", "object_has_children"],
});

export function registerObjectRoutes(app: App) {
  app.openapi(createObjectsRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    const data = await createObjects(
      c.get("deps").sql,
      c.get("principal"),
      project_id,
      resource_id,
      c.req.valid("json").objects,
      { batch: true },
    );
    return c.json({ data }, 201);
  });
  app.openapi(createObjectRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    const [created] = await createObjects(
      c.get("deps").sql,
      c.get("principal"),
      project_id,
      resource_id,
      [c.req.valid("json")],
      { batch: false },
    );
    return c.json(created, 201);
  });
  app.openapi(listObjectsRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    return jsonText(
      c,
      await listObjects(c.get("deps").sql, project_id, resource_id, c.req.valid("query")),
      200,
    );
  });
  app.openapi(getObjectRoute, async (c) => {
    const { project_id, resource_id, object_id } = c.req.valid("param");
    return c.json(await getObject(c.get("deps").sql, project_id, resource_id, object_id), 200);
  });
  app.openapi(updateObjectRoute, async (c) => {
    const { project_id, resource_id, object_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await updateObject(sql, principal, project_id, resource_id, object_id, body), 200);
  });
  app.openapi(deleteObjectRoute, async (c) => {
    const { project_id, resource_id, object_id } = c.req.valid("param");
    const { cascade } = c.req.valid("query");
    const [{ sql }, principal] = [c.get("deps"), c.get("principal")];
    await deleteObject(sql, principal, project_id, resource_id, object_id, cascade ?? false);
    return c.body(null, 204) as never;
  });
}

/** Objects of a resource (the application's own ids, in a hierarchy) and roles granted on them. */
import { z } from "@hono/zod-openapi";
import {
  booleanFilter,
  ChangedProperties,
  ConditionExpression,
  Id,
  listQuery,
  NewProperties,
  ProjectIdParam,
  Properties,
  text,
} from "./fields.ts";
import { ResourceIdParam } from "./resources.ts";

/** How deep a hierarchy of objects may go: an object without parent is at depth 1. */
export const MAX_OBJECT_DEPTH = 32;
/** At most this many objects in one batch. */
export const MAX_OBJECT_BATCH = 1000;

export const ObjectId = z.string().min(1, "must not be empty").max(200, "at most 200 characters")
  .regex(/^[A-Za-z0-9._:/@-]+$/, "only letters, digits and . _ : / @ -")
  .openapi({
    description:
      "The application's own id: 1 to 200 characters of `A-Za-z0-9._:/@-`, unique in the resource " +
      "(compared byte for byte)",
    example: "folder-1",
    pattern: "^[A-Za-z0-9._:/@-]{1,200}$",
  });

const ORGANIZATION = "An organization of the project (else 400 `invalid_params` naming the field): its " +
  "members' organization roles act on the object.";

const ObjectName = text(100).trim().nullable().optional().openapi({
  description: "At most 100 characters; omitted or null: none",
});

export const ObjectRecord = z.object({
  id: z.string(),
  project_id: z.string(),
  resource_id: z.string(),
  name: z.string().nullable(),
  parent_id: z.string().nullable(),
  depth: z.number().int().openapi({ description: "1 for an object without parent, at most 32" }),
  properties: Properties,
  organization_id: z.string().nullable().openapi({
    description:
      "The organization it belongs to, or null: the project's (deleting the organization sets null)",
  }),
  ...{
    created_at: z.string().openapi({ format: "date-time", description: "RFC 3339, UTC" }),
    updated_at: z.string().openapi({ format: "date-time", description: "RFC 3339, UTC" }),
  },
}).openapi("Object");
export type ObjectRecord = z.infer<typeof ObjectRecord>;

export const CreateObjectRequest = z.strictObject({
  id: ObjectId,
  name: ObjectName,
  parent_id: ObjectId.nullable().optional().openapi({
    description: "An object of the same resource (in a batch, possibly one created before it in the batch)",
  }),
  properties: NewProperties,
  organization_id: Id.nullable().optional().openapi({
    description: `The organization the object belongs to; omitted or null: none. ${ORGANIZATION}`,
  }),
}).openapi("CreateObjectRequest");
export type CreateObjectRequest = z.infer<typeof CreateObjectRequest>;

export const CreateObjectsRequest = z.strictObject({
  objects: z.array(CreateObjectRequest).min(1, "at least one object")
    .max(MAX_OBJECT_BATCH, `at most ${MAX_OBJECT_BATCH} objects`),
}).openapi("CreateObjectsRequest");
export type CreateObjectsRequest = z.infer<typeof CreateObjectsRequest>;

export const CreatedObjects = z.object({
  data: z.array(ObjectRecord).openapi({ description: "The objects created, in the request's order" }),
}).openapi("CreatedObjects");
export type CreatedObjects = z.infer<typeof CreatedObjects>;

export const UpdateObjectRequest = z.strictObject({
  name: ObjectName,
  parent_id: ObjectId.nullable().optional().openapi({
    description: "Omitted: unchanged. null: no parent. Given: moves the object (and its descendants) under " +
      "that object of the same resource, never under itself or a descendant, at most 32 levels deep.",
  }),
  properties: ChangedProperties,
  organization_id: Id.nullable().optional().openapi({
    description: `Omitted: unchanged. null: none (the project's). ${ORGANIZATION}`,
  }),
}).openapi("UpdateObjectRequest");
export type UpdateObjectRequest = z.infer<typeof UpdateObjectRequest>;

export const ObjectIdParam = ResourceIdParam.extend({
  object_id: ObjectId.openapi({ param: { name: "object_id", in: "path" } }),
});

export const DeleteObjectQuery = z.object({
  cascade: booleanFilter(
    "`true`: delete the object's descendants (and their grants) too; else an object " +
      "with children is refused (409 `object_has_children`)",
  ),
});

export const ObjectListQuery = listQuery(["id", "name", "created_at", "updated_at"] as const).extend({
  parent_id: ObjectId.optional().openapi({ description: "Only the children of this object" }),
  top_level: booleanFilter("`true`: only objects without parent"),
  organization_id: Id.optional().openapi({ description: "Only the objects of this organization" }),
});
export type ObjectListQuery = z.infer<typeof ObjectListQuery>;

const SubjectRef = z.strictObject({
  type: z.enum(["user", "client"]),
  id: Id.openapi({
    description: "A user's id (or, when no user has it, a user's `external_user_id`), or a client's id",
  }),
}).openapi("GrantSubject");

const ObjectRef = z.strictObject({
  type: z.string().min(1).max(50).openapi({ description: "The resource's code (case-insensitive)" }),
  id: ObjectId,
}).openapi("GrantObject");

export const Grant = z.object({
  id: z.string(),
  project_id: z.string(),
  subject: z.object({ type: z.enum(["user", "client"]), id: z.string() }),
  role_id: z.string(),
  object: z.object({
    type: z.string().openapi({ description: "The resource's code" }),
    id: z.string(),
    resource_id: z.string(),
  }),
  expires_at: z.string().nullable().openapi({
    format: "date-time",
    description: "RFC 3339, UTC; null: never",
  }),
  is_expired: z.boolean().openapi({ description: "Past `expires_at` now, by the database's clock" }),
  condition: z.string().nullable().openapi({
    description: "The grant's condition (a CEL expression) or null: it gives its permissions only when true",
  }),
  created_at: z.string().openapi({ format: "date-time" }),
  created_by: z.object({ type: z.enum(["user", "client"]), id: z.string().nullable() }),
}).openapi("Grant");
export type Grant = z.infer<typeof Grant>;

export const CreateGrantRequest = z.strictObject({
  subject: SubjectRef,
  role_id: Id,
  object: ObjectRef,
  expires_at: z.string().datetime({ offset: true, message: "an RFC 3339 date-time with its offset" })
    .nullable().optional().openapi({
      format: "date-time",
      description: "RFC 3339; in the future by the database's clock. Omitted or null: never expires.",
    }),
  condition: ConditionExpression.nullable().optional().openapi({
    description: "A condition the grant's permissions need (a CEL expression, as a role's conditions; the " +
      "role's own conditions apply too). Omitted or null: none.",
  }),
}).openapi("CreateGrantRequest");
export type CreateGrantRequest = z.infer<typeof CreateGrantRequest>;

export const GrantIdParam = ProjectIdParam.extend({
  grant_id: Id.openapi({ param: { name: "grant_id", in: "path" } }),
});

export const GrantListQuery = listQuery(["created_at", "expires_at"] as const).omit({ search: true }).extend({
  subject_type: z.enum(["user", "client"]).optional().openapi({
    description: "Only users' or clients' grants",
  }),
  subject_id: Id.optional().openapi({ description: "Only this user's (by id) or client's grants" }),
  role_id: Id.optional(),
  object_type: z.string().min(1).max(50).optional().openapi({ description: "A resource code" }),
  object_id: ObjectId.optional().openapi({ description: "With `object_type`: only grants on this object" }),
  include_expired: booleanFilter("`true`: also the expired grants not yet purged (default: live ones only)"),
});
export type GrantListQuery = z.infer<typeof GrantListQuery>;

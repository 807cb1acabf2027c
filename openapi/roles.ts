/** A role: a code, a name and the permissions a user with the role holds. */
import { z } from "@hono/zod-openapi";
import {
  Code,
  Description,
  Id,
  listQuery,
  Name,
  PermissionIds,
  ProjectIdParam,
  Timestamps,
} from "./fields.ts";

export const Role = z.object({
  id: z.string(),
  project_id: z.string(),
  code: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  permission_ids: z.array(z.string()),
  ...Timestamps,
}).openapi("Role");
export type Role = z.infer<typeof Role>;

const RoleBody = z.strictObject({
  code: Code.openapi({
    description: "Letters, digits, dash, underscore; unique in the project (case-insensitively)",
  }),
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
});

export const CreateRoleRequest = RoleBody.openapi("CreateRoleRequest");
export type CreateRoleRequest = z.infer<typeof CreateRoleRequest>;

export const UpdateRoleRequest = RoleBody.extend({
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the role's permissions.",
  }),
}).openapi("UpdateRoleRequest");
export type UpdateRoleRequest = z.infer<typeof UpdateRoleRequest>;

export const RoleIdParam = ProjectIdParam.extend({
  role_id: Id.openapi({ param: { name: "role_id", in: "path" } }),
});

export const DeleteRoleQuery = z.object({
  reassign_role_id: Id.optional().openapi({
    description: "Another role of the project: the deleted role's users move to it (else 409 `role_in_use`)",
  }),
});

export const RoleListQuery = listQuery(["name", "code", "created_at", "updated_at"] as const);
export type RoleListQuery = z.infer<typeof RoleListQuery>;

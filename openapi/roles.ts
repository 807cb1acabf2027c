/** A role: a code, a name and the permissions a user with the role holds. */
import { z } from "@hono/zod-openapi";
import {
  Code,
  ConditionExpression,
  Description,
  Id,
  listQuery,
  Name,
  PermissionIds,
  ProjectIdParam,
  Timestamps,
} from "./fields.ts";

const SCOPE =
  "Whose role it is: `\"project\"` (the default), given as a user's `role_id`, as the project's or an " +
  'identity provider\'s `default_role_id`, or granted on an object; or `"organization"`, held by the members ' +
  "of an organization in that organization (`…/organizations/{organization_id}/members`) and refused " +
  "everywhere else (400 `invalid_params`). Set when the role is created; it never changes.";
export const RoleScope = z.enum(["project", "organization"]).openapi("RoleScope", { description: SCOPE });
export type RoleScope = z.infer<typeof RoleScope>;

export const Role = z.object({
  id: z.string(),
  project_id: z.string(),
  code: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  scope: RoleScope,
  permission_ids: z.array(z.string()),
  conditions: z.array(z.object({ permission_id: z.string(), expression: z.string() })).openapi({
    description: "The conditions on some of `permission_ids`: such a permission is held only when its " +
      "expression is true (docs/authzen.md § Conditions). By permission id.",
  }),
  ...Timestamps,
}).openapi("Role");
export type Role = z.infer<typeof Role>;

const RoleConditions = z.array(
  z.strictObject({
    permission_id: Id,
    expression: ConditionExpression,
  }).openapi("RoleCondition"),
).max(500, "at most 500 conditions").openapi({
  description: "Conditions on some of the role's permissions (each at most once): a user holds such a " +
    "permission, through the role or a grant of it, only when the expression is true. Omitted: none.",
});

const RoleBody = z.strictObject({
  code: Code.openapi({
    description: "Letters, digits, dash, underscore; unique in the project (case-insensitively)",
  }),
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
  conditions: RoleConditions.optional(),
});

export const CreateRoleRequest = RoleBody.extend({
  // The component's description says the default: the SDK's generator takes none beside an enum's $ref.
  scope: RoleScope.optional(),
}).openapi("CreateRoleRequest");
export type CreateRoleRequest = z.infer<typeof CreateRoleRequest>;

export const UpdateRoleRequest = RoleBody.extend({
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the role's permissions.",
  }),
  conditions: RoleConditions.optional().openapi({
    description: "Omitted: unchanged (the conditions of permissions the role keeps stay). Given: replaces " +
      "them; each names one of the role's permissions (after this update).",
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

export const RoleListQuery = listQuery(["name", "code", "created_at", "updated_at"] as const).extend({
  scope: RoleScope.optional(),
});
export type RoleListQuery = z.infer<typeof RoleListQuery>;

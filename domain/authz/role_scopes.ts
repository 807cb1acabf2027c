/**
 * A role's scope (issue 49): a project role is a user's role, a default role or a grant's; an organization role
 * is held by an organization's members in that organization, and is refused everywhere else.
 */
import type { RoleScope } from "../../openapi/roles.ts";
import { AppError } from "../shared/errors.ts";

/** 400 `invalid_params` naming `field` when the role is an organization role. */
export function refuseOrganizationRole(scope: RoleScope, field: string): void {
  if (scope === "organization") {
    throw new AppError("invalid_params", {
      description: "an organization role is held only by an organization's members, in that organization",
      details: [{ field, issue: "is an organization role, not a project role" }],
    });
  }
}

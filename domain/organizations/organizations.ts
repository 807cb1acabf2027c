/**
 * Organizations (issue 49): the customer companies of one project, each with a name unique in the project, its
 * email domains (none of them a public mail domain, none held by another organization of the project) and its
 * second-factor policy. Deleting one removes its members and leaves its objects to the project.
 */
import { retryRead, type Sql, transaction, type Tx } from "../../db/connection.ts";
import { lockRolesShared } from "../../db/authz/roles.ts";
import { rolesHeldIn } from "../../db/organizations/members.ts";
import {
  deleteOrganizationRow,
  domainsHeldElsewhere,
  findOrganization,
  hasOwnProviders,
  insertOrganization,
  organizationListStatement,
  organizationNameUsed,
  setOrganizationDefaultRoles,
  setOrganizationDomains,
  touchOrganization,
  updateOrganizationRow,
} from "../../db/organizations/organizations.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  CreateOrganizationRequest,
  Organization,
  OrganizationListQuery,
  UpdateOrganizationRequest,
} from "../../openapi/organizations.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { requireCovered, requireCoversAll } from "../authz/coverage.ts";
import { type JsonText, listPage } from "../authz/lists.ts";
import { AppError, type ErrorDetail } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import type { Principal } from "../shared/principal.ts";
import { keepOrClear } from "../shared/updates.ts";
import { isPublicMailDomain } from "./public_domains.ts";
import { organizationRoles, requireGivable } from "./members.ts";

/**
 * The default roles given: organization roles of the project (400 naming `default_role_ids.<index>`), each the
 * caller adds one it covers (403): whoever joins by domain or just in time gets them.
 */
async function defaultRoles(
  tx: Tx,
  caller: Principal,
  projectId: string,
  given: string[],
  current: string[],
): Promise<string[]> {
  const roleIds = await organizationRoles(tx, projectId, given, "default_role_ids");
  const added = roleIds.filter((id) => !current.includes(id));
  await requireGivable(tx, caller, projectId, added, given, "default_role_ids");
  return roleIds;
}

/** The domains as given (lower-cased and checked by the schema): 400 naming each public mail domain. */
function checkDomains(domains: string[]): string[] {
  const details: ErrorDetail[] = [];
  domains.forEach((domain, i) => {
    if (isPublicMailDomain(domain)) {
      details.push({
        field: `domains.${i}`,
        issue: "is a public mail domain: anyone can have an address there",
      });
    }
  });
  if (details.length > 0) {
    throw new AppError("invalid_params", {
      description: "an organization cannot claim a public mail domain",
      details,
    });
  }
  return domains;
}

/** 409 `organization_name_already_used` when another organization of the project has the name. */
async function requireFreeName(sql: Sql, projectId: string, name: string, id: string | null): Promise<void> {
  if (await organizationNameUsed(sql, projectId, name, id)) {
    throw new AppError("organization_name_already_used", {
      details: [{ field: "name", issue: "another organization of this project has this name" }],
    });
  }
}

/** 409 `organization_domain_already_used` naming each domain another organization of the project holds. */
async function requireFreeDomains(
  sql: Sql,
  projectId: string,
  id: string | null,
  domains: string[],
): Promise<void> {
  const held = await domainsHeldElsewhere(sql, projectId, id, domains);
  if (held.size === 0) return;
  throw new AppError("organization_domain_already_used", {
    details: domains.flatMap((domain, i) =>
      held.has(domain)
        ? [{ field: `domains.${i}`, issue: `organization ${held.get(domain)} of this project has it` }]
        : []
    ),
  });
}

/** Who must use a second factor is the project's policy: setting it needs every permission of the project. */
async function requireMfaSettable(sql: Sql, caller: Principal, projectId: string): Promise<void> {
  await requireCoversAll(sql, caller, projectId, "mfa", "setting an organization's second-factor policy");
}

export async function createOrganization(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateOrganizationRequest,
): Promise<Organization> {
  const domains = checkDomains(input.domains ?? []);
  const id = newId();
  return await transaction(sql, async (tx) => {
    const mfa = input.mfa ?? "inherit";
    if (mfa !== "inherit") await requireMfaSettable(tx, caller, projectId);
    await requireFreeName(tx, projectId, input.name, null);
    await requireFreeDomains(tx, projectId, null, domains);
    const roleIds = await defaultRoles(tx, caller, projectId, input.default_role_ids ?? [], []);
    await insertOrganization(tx, {
      project_id: projectId,
      id,
      name: input.name,
      description: input.description || null,
      properties: input.properties ?? {},
      mfa,
      join_by_domain: input.join_by_domain ?? false,
    });
    await setOrganizationDomains(tx, projectId, id, domains);
    await setOrganizationDefaultRoles(tx, projectId, id, roleIds);
    await record(tx, {
      projectId,
      type: "organization.created",
      source: sourceOf(caller),
      target: { type: "organization", id },
    });
    return (await findOrganization(tx, projectId, id))!;
  });
}

export async function getOrganization(sql: Sql, projectId: string, id: string): Promise<Organization> {
  const found = await retryRead(() => findOrganization(sql, projectId, id));
  if (!found) throw new AppError("organization_not_found");
  return found;
}

export async function listOrganizations(
  sql: Sql,
  projectId: string,
  q: OrganizationListQuery,
): Promise<JsonText<PageOf<Organization>>> {
  return await listPage<Organization>(sql, organizationListStatement(projectId, q));
}

/** Applies the fields given; omitted ones keep their value, `domains` given replace them all. */
export async function updateOrganization(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
  input: UpdateOrganizationRequest,
): Promise<Organization> {
  const domains = input.domains === undefined ? undefined : checkDomains(input.domains);
  return await transaction(sql, async (tx) => {
    const current = await findOrganization(tx, projectId, id, { lock: "update" });
    if (!current) throw new AppError("organization_not_found");
    const name = input.name ?? current.name;
    const mfa = input.mfa ?? current.mfa;
    if (mfa !== current.mfa) await requireMfaSettable(tx, caller, projectId);
    if (name.toLowerCase() !== current.name.toLowerCase()) await requireFreeName(tx, projectId, name, id);
    const domainsChanged = domains !== undefined &&
      JSON.stringify([...domains].sort()) !== JSON.stringify(current.domains);
    if (domainsChanged) await requireFreeDomains(tx, projectId, id, domains);
    const roleIds = input.default_role_ids === undefined
      ? undefined
      : await defaultRoles(tx, caller, projectId, input.default_role_ids, current.default_role_ids);
    const rolesChanged = roleIds !== undefined &&
      JSON.stringify([...roleIds].sort()) !== JSON.stringify(current.default_role_ids);
    const fields = {
      name,
      description: keepOrClear(input.description, current.description),
      properties: input.properties ?? current.properties,
      mfa,
      join_by_domain: input.join_by_domain ?? current.join_by_domain,
    };
    const fieldsChanged = Object.keys(diff(
      {
        name: current.name,
        description: current.description,
        properties: current.properties,
        mfa: current.mfa,
        join_by_domain: current.join_by_domain,
      },
      fields,
    )).length > 0;
    if (!fieldsChanged && !domainsChanged && !rolesChanged) return current;
    if (fieldsChanged) await updateOrganizationRow(tx, projectId, id, fields);
    if (domainsChanged) await setOrganizationDomains(tx, projectId, id, domains);
    if (rolesChanged) await setOrganizationDefaultRoles(tx, projectId, id, roleIds);
    if (!fieldsChanged) await touchOrganization(tx, projectId, id);
    const updated = (await findOrganization(tx, projectId, id))!;
    await record(tx, {
      projectId,
      type: "organization.updated",
      source: sourceOf(caller),
      target: { type: "organization", id },
      changes: diff(current, updated),
    });
    return updated;
  });
}

/**
 * Deletes the organization: its members lose their roles there, so the caller must cover every role its members
 * hold (as removing each of them would need); its objects are left to the project (`organization_id` null).
 */
export async function deleteOrganization(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findOrganization(tx, projectId, id, { lock: "update" });
    if (!current) throw new AppError("organization_not_found");
    const held = await rolesHeldIn(tx, projectId, id);
    await lockRolesShared(tx, projectId, held);
    for (const roleId of held) {
      await requireCovered(
        tx,
        caller,
        projectId,
        { roleId },
        "organization_id",
        "deleting the organization (its members lose their roles there: each role)",
        { nameCodes: false },
      );
    }
    // Its own identity providers go with it (their linked identities too): as deleting a provider does, that
    // needs every permission of the project.
    if (await hasOwnProviders(tx, projectId, id)) {
      await requireCoversAll(tx, caller, projectId, "organization_id", "deleting its identity providers");
    }
    const gone = await deleteOrganizationRow(tx, projectId, id);
    await record(tx, {
      projectId,
      type: "organization.deleted",
      source: sourceOf(caller),
      target: { type: "organization", id },
      changes: diff(current, {}),
      details: { members_removed: gone.members, objects_released: gone.objects },
    });
  });
}

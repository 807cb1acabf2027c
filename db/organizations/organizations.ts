/** Queries on organizations and their email domains; an organization row is the API's `Organization`. */
import type { Properties } from "../../openapi/fields.ts";
import type { Organization, OrganizationListQuery } from "../../openapi/organizations.ts";
import { fixed, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

const COLUMNS = `o.id, o.project_id, o.name, o.description, o.properties,
      array(select d.domain from organization_domains d where d.organization_id = o.id order by d.domain collate "C")
        as domains,
      o.mfa, o.join_by_domain,
      array(select r.role_id from organization_default_roles r where r.organization_id = o.id
            order by r.role_id collate "C") as default_role_ids,
      ${timestampsText("o")}`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

/** The stored fields of an organization (its domains apart). */
export type OrganizationFields = Pick<
  Organization,
  "name" | "description" | "properties" | "mfa" | "join_by_domain"
>;

export async function insertOrganization(
  sql: Sql,
  o: OrganizationFields & { project_id: string; id: string },
): Promise<void> {
  await sql`
    insert into organizations (project_id, id, name, description, properties, mfa, join_by_domain)
    values (${o.project_id}, ${o.id}, ${o.name}, ${o.description}, ${sql.json(o.properties as Properties)},
            ${o.mfa}, ${o.join_by_domain})`;
}

/** The organization; `lock` holds it (`for update`) for the rest of the transaction, `share` (`for share`). */
export async function findOrganization(
  sql: Sql,
  projectId: string,
  id: string,
  opts: { lock?: "update" | "share" } = {},
): Promise<Organization | undefined> {
  const lock = opts.lock === "update"
    ? sql`for update of o`
    : opts.lock === "share"
    ? sql`for share of o`
    : sql``;
  const [row] = await sql<Organization[]>`
    select ${columns(sql)} from organizations o where o.project_id = ${projectId} and o.id = ${id} ${lock}`;
  return row;
}

export async function updateOrganizationRow(
  sql: Sql,
  projectId: string,
  id: string,
  o: OrganizationFields,
): Promise<void> {
  await sql`
    update organizations set name = ${o.name}, description = ${o.description},
      properties = ${sql.json(o.properties as Properties)}, mfa = ${o.mfa},
      join_by_domain = ${o.join_by_domain}, updated_at = now()
    where project_id = ${projectId} and id = ${id}`;
}

/** Marks the organization changed (its domains were replaced, say). */
export async function touchOrganization(sql: Sql, projectId: string, id: string): Promise<void> {
  await sql`update organizations set updated_at = now() where project_id = ${projectId} and id = ${id}`;
}

/** Replaces the organization's domains with exactly these. */
export async function setOrganizationDomains(
  sql: Sql,
  projectId: string,
  id: string,
  domains: string[],
): Promise<void> {
  await sql`
    delete from organization_domains
    where project_id = ${projectId} and organization_id = ${id} and domain <> all(${domains}::text[])`;
  if (domains.length === 0) return;
  await sql`
    insert into organization_domains (project_id, organization_id, domain)
    select ${projectId}, ${id}, d from unnest(${domains}::text[]) as d
    on conflict (organization_id, domain) do nothing`;
}

/** Replaces the organization's default roles with exactly these. */
export async function setOrganizationDefaultRoles(
  sql: Sql,
  projectId: string,
  id: string,
  roleIds: string[],
): Promise<void> {
  await sql`
    delete from organization_default_roles
    where project_id = ${projectId} and organization_id = ${id} and role_id <> all(${roleIds}::text[])`;
  if (roleIds.length === 0) return;
  await sql`
    insert into organization_default_roles (project_id, organization_id, role_id)
    select ${projectId}, ${id}, r from unnest(${roleIds}::text[]) as r
    on conflict (organization_id, role_id) do nothing`;
}

/** Which of these domains another organization of the project holds, and which one: domain → organization id. */
export async function domainsHeldElsewhere(
  sql: Sql,
  projectId: string,
  id: string | null,
  domains: string[],
): Promise<Map<string, string>> {
  if (domains.length === 0) return new Map();
  const rows = await sql<{ domain: string; organization_id: string }[]>`
    select domain, organization_id from organization_domains
    where project_id = ${projectId} and domain = any(${domains}::text[])
      and organization_id is distinct from ${id}`;
  return new Map(rows.map((r) => [r.domain, r.organization_id]));
}

/** Whether another organization of the project has this name (case-insensitively). */
export async function organizationNameUsed(
  sql: Sql,
  projectId: string,
  name: string,
  exceptId: string | null,
): Promise<boolean> {
  const rows = await sql`
    select 1 from organizations
    where project_id = ${projectId} and lower(name) = lower(${name}) and id is distinct from ${exceptId}`;
  return rows.length > 0;
}

/** Deletes the organization: its domains and members go with it, its objects are left to the project. */
export async function deleteOrganizationRow(
  sql: Sql,
  projectId: string,
  id: string,
): Promise<{ members: number; objects: number }> {
  const [row] = await sql<{ members: number; objects: number }[]>`
    select (select count(*) from organization_members
            where project_id = ${projectId} and organization_id = ${id})::int as members,
           (select count(*) from objects
            where project_id = ${projectId} and organization_id = ${id})::int as objects`;
  await sql`delete from organizations where project_id = ${projectId} and id = ${id}`;
  return row;
}

/** The list's statement: `search` matches the name, the description and the domains. */
export function organizationListStatement(projectId: string, q: OrganizationListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where o.project_id = $1";
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (o.name ilike ${like} or o.description ilike ${like} or exists (
      select from organization_domains d where d.organization_id = o.id and d.domain ilike ${like}))`;
  }
  return pageStatement({ table: "organizations", alias: "o" }, { columns: COLUMNS }, where, params, q);
}

/** Whether the organization has identity providers of its own (deleting it deletes them). */
export async function hasOwnProviders(sql: Sql, projectId: string, id: string): Promise<boolean> {
  const rows = await sql`
    select 1 from identity_providers where project_id = ${projectId} and organization_id = ${id} limit 1`;
  return rows.length > 0;
}

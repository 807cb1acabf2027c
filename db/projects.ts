/** Queries on projects. Every function takes `sql` first so it runs inside a transaction as well. */
import type { Sql } from "./connection.ts";
import { containsPattern, offsetOf, type Page, pageOf, type Sort } from "./lists.ts";

export type ProjectRow = {
  id: string;
  name: string;
  description: string | null;
  redirect_uris: string[];
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
};

const columns = (sql: Sql) => sql`id, name, description, redirect_uris, is_active, created_at, updated_at`;

export async function insertProject(
  sql: Sql,
  p: { id: string; name: string; description: string | null; redirect_uris: string[]; is_active: boolean },
): Promise<ProjectRow> {
  const [row] = await sql<ProjectRow[]>`
    insert into projects (id, name, description, redirect_uris, is_active)
    values (${p.id}, ${p.name}, ${p.description}, ${p.redirect_uris}, ${p.is_active})
    returning ${columns(sql)}`;
  return row;
}

export async function findProject(sql: Sql, id: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow[]>`select ${columns(sql)} from projects where id = ${id}`;
  return row;
}

export async function updateProject(
  sql: Sql,
  id: string,
  p: { name: string; description: string | null; redirect_uris: string[]; is_active: boolean },
): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow[]>`
    update projects
    set name = ${p.name}, description = ${p.description}, redirect_uris = ${p.redirect_uris},
        is_active = ${p.is_active},
        tokens_valid_after = case when is_active and not ${p.is_active} then now() else tokens_valid_after end,
        updated_at = now()
    where id = ${id}
    returning ${columns(sql)}`;
  return row;
}

export type ProjectSortField = "name" | "created_at" | "updated_at";

export async function listProjects(
  sql: Sql,
  q: Page & Sort<ProjectSortField> & { search?: string; is_active?: boolean },
): Promise<{ rows: ProjectRow[]; total: number }> {
  const where = sql`
    where true
    ${
    q.search
      ? sql`and (name ilike ${containsPattern(q.search)} or description ilike ${containsPattern(q.search)})`
      : sql``
  }
    ${q.is_active === undefined ? sql`` : sql`and is_active = ${q.is_active}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(ProjectRow & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from projects ${where}
      order by ${sql(q.sort_by)} ${dir}, id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from projects ${where}`,
  );
}

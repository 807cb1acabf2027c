/** Queries on resources and their permissions. */
import type { Sql } from "./connection.ts";

export type NewPermission = { id: string; name: string; code: string; description: string | null };
export type NewResource = {
  id: string;
  name: string;
  code: string;
  description: string | null;
  is_default: boolean;
  permissions: NewPermission[];
};

/** Inserts resources and their permissions with two statements, whatever their number. */
export async function insertResources(sql: Sql, projectId: string, resources: NewResource[]): Promise<void> {
  if (resources.length === 0) return;
  await sql`insert into resources ${
    sql(
      resources.map((r) => ({
        project_id: projectId,
        id: r.id,
        name: r.name,
        code: r.code,
        description: r.description,
        is_default: r.is_default,
      })),
    )
  }`;
  const permissions = resources.flatMap((r) =>
    r.permissions.map((p) => ({
      project_id: projectId,
      id: p.id,
      resource_id: r.id,
      name: p.name,
      code: p.code,
      description: p.description,
    }))
  );
  if (permissions.length > 0) await sql`insert into permissions ${sql(permissions)}`;
}

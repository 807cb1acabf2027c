/** A project's logo (one row per project, bytes and all) and the branding the pages its users see read. */
import type { Sql } from "../connection.ts";

export type LogoType = "image/png" | "image/webp" | "image/svg+xml";

/** The logo as served: its bytes, type and hash. */
export type Logo = { content_type: LogoType; image: Uint8Array; sha256: string };

/** Stores the project's logo, replacing any; the hash versions its URL. */
export async function upsertLogo(sql: Sql, projectId: string, logo: Logo): Promise<void> {
  await sql`
    insert into project_logos (project_id, content_type, image, sha256)
    values (${projectId}, ${logo.content_type}, ${logo.image}, ${logo.sha256})
    on conflict (project_id) do update
      set content_type = excluded.content_type, image = excluded.image, sha256 = excluded.sha256,
          updated_at = now()`;
}

/** Removes the project's logo; whether there was one. */
export async function deleteLogo(sql: Sql, projectId: string): Promise<boolean> {
  const rows = await sql`delete from project_logos where project_id = ${projectId} returning project_id`;
  return rows.length > 0;
}

/** The logo of an active project, or undefined. */
export async function findLogo(sql: Sql, projectId: string): Promise<Logo | undefined> {
  const [row] = await sql<Logo[]>`
    select l.content_type, l.image, l.sha256
    from project_logos l join projects p on p.id = l.project_id
    where l.project_id = ${projectId} and p.is_active`;
  return row;
}

/** What a page of the project shows: its name, branding and the logo's hash, in one read. */
export type PageBrandingRow = {
  name: string;
  display_name: string | null;
  primary_color: string | null;
  terms_url: string | null;
  privacy_url: string | null;
  logo_sha256: string | null;
};

export async function findPageBranding(sql: Sql, projectId: string): Promise<PageBrandingRow | undefined> {
  const [row] = await sql<PageBrandingRow[]>`
    select p.name, p.branding_display_name as display_name, p.branding_primary_color as primary_color,
           p.branding_terms_url as terms_url, p.branding_privacy_url as privacy_url,
           (select l.sha256 from project_logos l where l.project_id = p.id) as logo_sha256
    from projects p where p.id = ${projectId}`;
  return row;
}

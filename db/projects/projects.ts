/** Queries on projects; a project row is the API's `Project`. */
import { type Project, type ProjectListQuery, SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { fixed, quoted, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import type { AttachedRead } from "../authz/principals.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

/**
 * A project row's columns as text, per alias (`p`, or the table's own name). The system project's id is this
 * code's constant, written in as its literal.
 */
const columnText = (alias: string) =>
  [
    "id",
    "name",
    "description",
    "redirect_uris",
    "post_logout_redirect_uris",
    "mfa",
    "is_active",
    "require_verified_email",
    "signup",
    "client_metadata_documents",
    "default_role_id",
  ]
    .map((c) => quoted(`${alias}.${c}`)).join(", ") +
  `, ${brandingText(alias)}` +
  `, ${quoted(`${alias}.id`)} = '${SYSTEM_PROJECT_ID}' as is_system, ${timestampsText(alias)}`;
/** `branding` as one JSON object; `logo_url` is the logo's path on this origin, versioned by the image's hash. */
function brandingText(alias: string): string {
  const col = (c: string) => quoted(`${alias}.branding_${c}`);
  const id = quoted(`${alias}.id`);
  return `json_build_object('display_name', ${col("display_name")}, 'primary_color', ${
    col("primary_color")
  }, ` +
    `'terms_url', ${col("terms_url")}, 'privacy_url', ${col("privacy_url")}, 'logo_url', ` +
    `(select '/branding/' || ${id} || '/logo?v=' || left(l.sha256, 16) from project_logos l ` +
    `where l.project_id = ${id})) as branding`;
}

const COLUMNS = { p: columnText("p"), projects: columnText("projects") };

const columns = (sql: Sql, alias: keyof typeof COLUMNS = "p") => fixed(sql, COLUMNS[alias]);

/** `findProject` as one JSON value, for the gate's statement (db/authz/principals.ts): the same fields, in order. */
const PROJECT_JSON = `select row_to_json(x) from (select ${COLUMNS.p} from projects p where p.id = $1) x`;

export function projectRead(id: string): AttachedRead {
  return { text: PROJECT_JSON, params: [id] };
}

/** The stored fields of a project that an update sets. */
export type ProjectFields =
  & Pick<
    Project,
    | "name"
    | "description"
    | "redirect_uris"
    | "post_logout_redirect_uris"
    | "mfa"
    | "is_active"
    | "require_verified_email"
    | "signup"
    | "client_metadata_documents"
    | "default_role_id"
  >
  & { branding: BrandingFields };

/** The stored branding fields (the logo is stored apart, db/projects/branding.ts). */
export type BrandingFields = Omit<Project["branding"], "logo_url">;

/** A new project has no roles yet, so no default role. */
export async function insertProject(
  sql: Sql,
  p: Omit<ProjectFields, "default_role_id"> & { id: string },
): Promise<Project> {
  const [row] = await sql<Project[]>`
    insert into projects
      (id, name, description, redirect_uris, post_logout_redirect_uris, mfa, is_active, require_verified_email,
       signup, client_metadata_documents, branding_display_name, branding_primary_color, branding_terms_url,
       branding_privacy_url)
    values (${p.id}, ${p.name}, ${p.description}, ${p.redirect_uris}, ${p.post_logout_redirect_uris}, ${p.mfa},
            ${p.is_active}, ${p.require_verified_email}, ${sql.json(p.signup)},
            ${sql.json(p.client_metadata_documents)}, ${p.branding.display_name},
            ${p.branding.primary_color}, ${p.branding.terms_url}, ${p.branding.privacy_url})
    returning ${columns(sql, "projects")}`;
  return row;
}

/** The project; `lock` holds it for the rest of the transaction. */
export async function findProject(
  sql: Sql,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<Project | undefined> {
  const [row] = await sql<Project[]>`
    select ${columns(sql)} from projects p where p.id = ${id} ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

/** Deactivation also sets the cut-off before which the project's tokens are refused. */
export async function updateProjectRow(sql: Sql, id: string, p: ProjectFields): Promise<Project | undefined> {
  const [row] = await sql<Project[]>`
    update projects as p
    set name = ${p.name}, description = ${p.description}, redirect_uris = ${p.redirect_uris},
        post_logout_redirect_uris = ${p.post_logout_redirect_uris}, mfa = ${p.mfa},
        is_active = ${p.is_active}, require_verified_email = ${p.require_verified_email},
        signup = ${sql.json(p.signup)}, client_metadata_documents = ${sql.json(p.client_metadata_documents)},
        default_role_id = ${p.default_role_id},
        branding_display_name = ${p.branding.display_name}, branding_primary_color = ${p.branding.primary_color},
        branding_terms_url = ${p.branding.terms_url}, branding_privacy_url = ${p.branding.privacy_url},
        tokens_valid_after = case when p.is_active and not ${p.is_active} then clock_timestamp()
                                  else p.tokens_valid_after end,
        updated_at = now()
    where p.id = ${id}
    returning ${columns(sql)}`;
  return row;
}

/** The project's token cut-off, moved to now after the deactivation committed (see restampClientCutoff). */
export async function restampProjectCutoff(sql: Sql, id: string): Promise<void> {
  await sql`update projects set tokens_valid_after = clock_timestamp() where id = ${id} and not is_active`;
}

/** The list's statement: one source for the list and for the read the gate attaches. */
export function projectListStatement(q: ProjectListQuery): PageStatement {
  const params: Params = [];
  let where = "where true";
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (p.name ilike ${like} or p.description ilike ${like})`;
  }
  if (q.is_active !== undefined) where += ` and p.is_active = $${params.push(q.is_active)}`;
  return pageStatement({ table: "projects", alias: "p" }, { columns: COLUMNS.p }, where, params, q);
}

/** The project's second-factor policy, read live at each sign-in. */
export async function findMfaPolicy(sql: Sql, id: string): Promise<Project["mfa"] | undefined> {
  const [row] = await sql<{ mfa: Project["mfa"] }[]>`select mfa from projects where id = ${id}`;
  return row?.mfa;
}

/** The project's sign-up rule and what the sign-up page needs of it, read live on each sign-up page. */
export async function findSignupPolicy(
  sql: Sql,
  id: string,
): Promise<Pick<Project, "signup" | "require_verified_email" | "is_active"> | undefined> {
  const [row] = await sql<Pick<Project, "signup" | "require_verified_email" | "is_active">[]>`
    select signup, require_verified_email, is_active from projects where id = ${id}`;
  return row;
}

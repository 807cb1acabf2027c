/** Projects: the system project, default resources, each project's admin client, and the project rules. */
import { grantDefaultPermissions, insertClient } from "../../db/oauth/clients.ts";
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  type BrandingFields,
  findProject,
  insertProject,
  projectListStatement,
  projectRead,
  restampProjectCutoff,
  updateProjectRow,
} from "../../db/projects/projects.ts";
import { insertResources } from "../../db/authz/resources.ts";
import { endSessions } from "../../db/oauth/sessions.ts";
import type { PageOf } from "../../openapi/fields.ts";
import {
  type BrandingRequest,
  type CreatedProject,
  type CreateProjectRequest,
  type Project,
  type ProjectListQuery,
  SYSTEM_PROJECT_ID,
  type UpdateProjectRequest,
} from "../../openapi/projects.ts";
import { diff, record, type Source, sourceOf, updateType } from "../audit/audit.ts";
import { requireCoversAll } from "../authz/coverage.ts";
import { requireProjectRole } from "../authz/roles.ts";
import { createConsoleClient } from "../console/client.ts";
import { defaultResources } from "../authz/defaults.ts";
import { AppError } from "../shared/errors.ts";
import { type Attached, type AttachedRead, attachedRecord } from "../authz/gate.ts";
import { type JsonText, listPage } from "../authz/lists.ts";
import { newId, newSecret } from "../shared/ids.ts";
import type { Principal } from "../shared/principal.ts";
import { hashSecret } from "../shared/secrets.ts";
import { keepOrClear } from "../shared/updates.ts";

/** Creates a project, its default resources and its admin client in one transaction. */
export async function createProject(
  sql: Sql,
  source: Source,
  input: CreateProjectRequest,
  opts: { id?: string; adminClientId?: string; adminSecret?: string } = {},
): Promise<CreatedProject> {
  const id = opts.id ?? newId();
  const clientId = opts.adminClientId ?? newId();
  const secret = opts.adminSecret ?? newSecret();
  const row = await transaction(sql, async (tx) => {
    const project = await insertProject(tx, {
      id,
      name: input.name,
      description: input.description ?? null,
      redirect_uris: input.redirect_uris ?? [],
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
      mfa: input.mfa ?? "optional",
      is_active: input.is_active ?? true,
      require_verified_email: input.require_verified_email ?? false,
      signup: input.signup ?? "off",
      client_metadata_documents: input.client_metadata_documents ?? "off",
      branding: brandingFields(input.branding),
    });
    await insertResources(tx, id, defaultResources(id === SYSTEM_PROJECT_ID));
    await insertClient(tx, {
      project_id: id,
      id: clientId,
      name: "Admin client",
      description: "Created with the project; holds every default permission",
      secret_hash: hashSecret(secret),
      is_admin: true,
    });
    await grantDefaultPermissions(tx, id, clientId);
    await createConsoleClient(tx, id);
    await record(tx, {
      projectId: id,
      type: "project.created",
      source,
      target: { type: "project", id },
      details: { admin_client_id: clientId },
    });
    return project;
  });
  return { ...row, admin_client: { client_id: clientId, client_secret: secret } };
}

/** `getProject`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
export { projectRead };

/** The project; from `attached` when the gate read it already. */
export async function getProject(sql: Sql, id: string, attached?: Attached): Promise<Project> {
  const found = attachedRecord<Project>(attached, projectRead(id));
  const row = found !== undefined ? found : await retryRead(() => findProject(sql, id));
  if (!row) throw new AppError("project_not_found");
  return row;
}

/**
 * PUT semantics of the whole API: `name` is required; an omitted optional field keeps its value, and null
 * (or an empty string) clears `description`. Only a system-project token may change `is_active`, and the
 * system project cannot be deactivated.
 */
export async function updateProject(
  sql: Sql,
  principal: Principal,
  id: string,
  input: UpdateProjectRequest,
): Promise<Project> {
  const project = await transaction(sql, async (tx) => {
    const current = await findProject(tx, id, { lock: true });
    if (!current) throw new AppError("project_not_found");
    const redirectUris = input.redirect_uris ?? current.redirect_uris;
    if (!sameList(redirectUris, current.redirect_uris)) {
      // Where every user's codes are sent: only a caller that covers the whole project may change it.
      await requireCoversAll(tx, principal, id, "redirect_uris", "changing redirect_uris");
    }
    const logoutUris = input.post_logout_redirect_uris ?? current.post_logout_redirect_uris;
    if (!sameList(logoutUris, current.post_logout_redirect_uris)) {
      // Where a logout sends the browser: the same least-privilege rule as redirect_uris.
      await requireCoversAll(
        tx,
        principal,
        id,
        "post_logout_redirect_uris",
        "changing post_logout_redirect_uris",
      );
    }
    const requireVerified = input.require_verified_email ?? current.require_verified_email;
    if (requireVerified !== current.require_verified_email) {
      // Who may sign in: the same least-privilege rule as redirect_uris.
      await requireCoversAll(tx, principal, id, "require_verified_email", "changing require_verified_email");
    }
    const signup = input.signup ?? current.signup;
    if (JSON.stringify(signup) !== JSON.stringify(current.signup)) {
      // Who may create an account: the same least-privilege rule as redirect_uris.
      await requireCoversAll(tx, principal, id, "signup", "changing the sign-up rule");
    }
    const metadataDocuments = input.client_metadata_documents ?? current.client_metadata_documents;
    if (JSON.stringify(metadataDocuments) !== JSON.stringify(current.client_metadata_documents)) {
      // Which applications may ask the project's users for access: the same least-privilege rule as redirect_uris.
      await requireCoversAll(
        tx,
        principal,
        id,
        "client_metadata_documents",
        "changing which client metadata documents are admitted",
      );
    }
    const defaultRoleId = input.default_role_id === undefined
      ? current.default_role_id
      : input.default_role_id;
    if (defaultRoleId !== current.default_role_id) {
      // What anyone who signs up may do: the same least-privilege rule as `signup`.
      if (defaultRoleId !== null) await requireProjectRole(tx, id, defaultRoleId, "default_role_id");
      await requireCoversAll(tx, principal, id, "default_role_id", "changing the role given at sign-up");
    }
    const mfa = input.mfa ?? current.mfa;
    if (mfa !== current.mfa) {
      // Who must show a second factor: the same least-privilege rule as redirect_uris.
      await requireCoversAll(tx, principal, id, "mfa", "changing the second-factor policy");
    }
    const isActive = input.is_active ?? current.is_active;
    if (isActive !== current.is_active) {
      if (!principal.isSystem) {
        throw new AppError("insufficient_permission", {
          description: "only a system-project token may activate or deactivate a project",
        });
      }
      // It switches off the project's admin client too: only callers that cover the whole project.
      await requireCoversAll(tx, principal, id, "is_active", "activating or deactivating a project");
      if (id === SYSTEM_PROJECT_ID) {
        throw new AppError("invalid_params", {
          details: [{ field: "is_active", issue: "the system project cannot be deactivated" }],
        });
      }
    }
    const row = await updateProjectRow(tx, id, {
      name: input.name,
      description: keepOrClear(input.description, current.description),
      redirect_uris: redirectUris,
      post_logout_redirect_uris: logoutUris,
      mfa,
      is_active: isActive,
      require_verified_email: requireVerified,
      signup,
      client_metadata_documents: metadataDocuments,
      default_role_id: defaultRoleId,
      branding: input.branding ? brandingFields(input.branding) : current.branding,
    });
    if (current.is_active && !isActive) await endSessions(tx, { projectId: id });
    await record(tx, {
      projectId: id,
      type: updateType("project", current, row!),
      source: sourceOf(principal),
      target: { type: "project", id },
      changes: diff(current, row!),
    });
    return { deactivated: current.is_active && !isActive, row: row! };
  });
  if (project.deactivated) await restampProjectCutoff(sql, id);
  return project.row;
}

/** `listProjects`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
export function projectListRead(q: ProjectListQuery): AttachedRead {
  return projectListStatement(q);
}

/** A page of the projects; from `attached` when the gate read it already. */
export async function listProjects(
  sql: Sql,
  q: ProjectListQuery,
  attached?: Attached,
): Promise<JsonText<PageOf<Project>>> {
  return await listPage<Project>(sql, projectListStatement(q), attached);
}

/** The stored branding fields of a request's `branding`: each one left out is none. */
function brandingFields(b: BrandingRequest | undefined): BrandingFields {
  return {
    display_name: b?.display_name ?? null,
    primary_color: b?.primary_color?.toLowerCase() ?? null,
    terms_url: b?.terms_url ?? null,
    privacy_url: b?.privacy_url ?? null,
  };
}

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

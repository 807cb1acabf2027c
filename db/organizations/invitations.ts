/** Queries on invitations to join an organization (migration 0034). */
import type { PageOf } from "../../openapi/fields.ts";
import type { Invitation, InvitationListQuery } from "../../openapi/organizations.ts";
import { fixed, isoText, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, offsetOf, pageOf } from "../lists.ts";

const STATUS =
  `case when i.accepted_at is not null then 'accepted' when i.revoked_at is not null then 'revoked'
  when i.expires_at <= now() then 'expired' else 'pending' end`;

const INVITATION_COLUMNS = `i.id, i.organization_id, i.email, i.role_ids, ${STATUS} as status,
  ${isoText("i.expires_at")} as expires_at, i.sent_count, ${isoText("i.last_sent_at")} as last_sent_at,
  ${isoText("i.accepted_at")} as accepted_at, i.accepted_user_id, ${isoText("i.revoked_at")} as revoked_at,
  ${timestampsText("i")}`;
const invitationColumns = (sql: Sql) => fixed(sql, INVITATION_COLUMNS);

/** Still waiting: neither accepted nor revoked (whether or not its link expired). */
const OPEN = "i.accepted_at is null and i.revoked_at is null";

/**
 * A new invitation, replacing (revoking) the open one to the same address in the organization, if any; the
 * replaced one's id is returned too.
 */
export async function insertInvitation(
  sql: Sql,
  r: {
    project_id: string;
    id: string;
    organization_id: string;
    email: string;
    role_ids: string[];
    token_hash: Uint8Array;
    ttl_seconds: number;
  },
): Promise<{ invitation: Invitation; replaced: string | null }> {
  const [old] = await sql<{ id: string }[]>`
    update organization_invitations i set revoked_at = now(), updated_at = now()
    where i.project_id = ${r.project_id} and i.organization_id = ${r.organization_id} and i.email = ${r.email}
      and ${fixed(sql, OPEN)}
    returning i.id`;
  const [row] = await sql<Invitation[]>`
    insert into organization_invitations as i
      (project_id, id, organization_id, email, role_ids, token_hash, ttl_seconds, expires_at)
    values (${r.project_id}, ${r.id}, ${r.organization_id}, ${r.email}, ${r.role_ids}::text[], ${r.token_hash},
            ${r.ttl_seconds}, now() + make_interval(secs => ${r.ttl_seconds}))
    returning ${invitationColumns(sql)}`;
  return { invitation: row, replaced: old?.id ?? null };
}

/** The organization's invitation; `lock` holds it (`for update`) for the rest of the transaction. */
export async function findInvitation(
  sql: Sql,
  projectId: string,
  organizationId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<Invitation | undefined> {
  const [row] = await sql<Invitation[]>`
    select ${invitationColumns(sql)} from organization_invitations i
    where i.project_id = ${projectId} and i.organization_id = ${organizationId} and i.id = ${id}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

/** A new link for an open invitation, working `ttl_seconds` from now; undefined when it is not open. */
export async function renewInvitation(
  sql: Sql,
  projectId: string,
  organizationId: string,
  id: string,
  tokenHash: Uint8Array,
): Promise<Invitation | undefined> {
  const [row] = await sql<Invitation[]>`
    update organization_invitations i
    set token_hash = ${tokenHash}, expires_at = now() + make_interval(secs => i.ttl_seconds),
        sent_count = i.sent_count + 1, last_sent_at = now(), updated_at = now()
    where i.project_id = ${projectId} and i.organization_id = ${organizationId} and i.id = ${id}
      and ${fixed(sql, OPEN)}
    returning ${invitationColumns(sql)}`;
  return row;
}

/** Revokes an open invitation; undefined when it is not open. */
export async function revokeInvitationRow(
  sql: Sql,
  projectId: string,
  organizationId: string,
  id: string,
): Promise<Invitation | undefined> {
  const [row] = await sql<Invitation[]>`
    update organization_invitations i set revoked_at = now(), updated_at = now()
    where i.project_id = ${projectId} and i.organization_id = ${organizationId} and i.id = ${id}
      and ${fixed(sql, OPEN)}
    returning ${invitationColumns(sql)}`;
  return row;
}

/** A page of the organization's invitations: `search` matches the address. */
export async function listInvitationRows(
  sql: Sql,
  projectId: string,
  organizationId: string,
  q: InvitationListQuery,
): Promise<PageOf<Invitation>> {
  const where = sql`
    where i.project_id = ${projectId} and i.organization_id = ${organizationId}
    ${q.search ? sql`and i.email ilike ${containsPattern(q.search)}` : sql``}
    ${q.status === undefined ? sql`` : sql`and ${fixed(sql, STATUS)} = ${q.status}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(Invitation & { total_count: number })[]>`
      select ${invitationColumns(sql)}, count(*) over ()::int as total_count
      from organization_invitations i ${where}
      order by ${sql("i." + q.sort_by)} ${dir}, i.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from organization_invitations i ${where}`,
  );
}

/** What the invitation page shows of a link's invitation, found by the SHA-256 of its token. */
export type InvitationLink = {
  id: string;
  project_id: string;
  project_name: string;
  project_active: boolean;
  organization_id: string;
  organization_name: string;
  email: string;
  role_ids: string[];
  status: Invitation["status"];
  /** The project's user with the invited address, if any. */
  user_id: string | null;
  user_active: boolean | null;
  user_email_verified: boolean | null;
  /** Whether that user is a member of the organization already. */
  member: boolean;
};

export async function findInvitationLink(
  sql: Sql,
  tokenHash: Uint8Array,
): Promise<InvitationLink | undefined> {
  const [row] = await sql<InvitationLink[]>`
    select i.id, i.project_id, p.name as project_name, p.is_active as project_active, i.organization_id,
           o.name as organization_name, i.email, i.role_ids, ${fixed(sql, STATUS)} as status,
           u.id as user_id, u.is_active as user_active, u.email_verified as user_email_verified,
           exists (select from organization_members m where m.organization_id = i.organization_id
                   and m.user_id = u.id) as member
    from organization_invitations i
    join projects p on p.id = i.project_id
    join organizations o on o.project_id = i.project_id and o.id = i.organization_id
    left join users u on u.project_id = i.project_id and u.email = i.email
    where i.token_hash = ${tokenHash}`;
  return row;
}

/**
 * Spends a pending invitation for this user, in one statement: of concurrent acceptances one wins. Its roles
 * that are still organization roles of the project come back; undefined when it is no longer pending.
 */
export async function acceptInvitationRow(
  sql: Sql,
  tokenHash: Uint8Array,
  userId: string,
): Promise<{ id: string; role_ids: string[] } | undefined> {
  const [row] = await sql<{ id: string; role_ids: string[] }[]>`
    update organization_invitations i set accepted_at = now(), accepted_user_id = ${userId}, updated_at = now()
    where i.token_hash = ${tokenHash} and ${fixed(sql, OPEN)} and i.expires_at > now()
    returning i.id, array(select r.id from roles r
                          where r.project_id = i.project_id and r.id = any(i.role_ids) and r.scope = 'organization'
                          order by r.id collate "C") as role_ids`;
  return row;
}

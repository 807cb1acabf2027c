/** Queries of consents: what a user granted a third-party client, per API (or the project), and login pages held for it. */
import type { Sql } from "../connection.ts";

export type ConsentRow = {
  id: string;
  project_id: string;
  user_id: string;
  client_id: string;
  client_name: string;
  /** The API (a resource) the consent is for; null: the project. */
  resource_id: string | null;
  resource_name: string | null;
  permissions: string[];
  created_at: string;
  updated_at: string;
};

const COLUMNS = (sql: Sql) =>
  sql`k.id, k.project_id, k.user_id, k.client_id, c.name as client_name, k.resource_id, r.name as resource_name,
      k.permissions,
      to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
      to_char(k.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at`;

/** Whether a client is a third party's, from its row (the caller decides with domain/signin/consent.ts). */
export async function findConsentClient(
  sql: Sql,
  projectId: string,
  clientId: string,
): Promise<{ id: string; name: string; third_party: boolean; metadata_url: string | null } | undefined> {
  const [row] = await sql<{ id: string; name: string; third_party: boolean; metadata_url: string | null }[]>`
    select id, name, third_party, metadata_url from clients where project_id = ${projectId} and id = ${clientId}`;
  return row;
}

/** The permission codes a user granted a client for an API (or the project), or undefined. */
export async function findConsent(
  sql: Sql,
  k: { project_id: string; user_id: string; client_id: string; resource_id: string | null },
): Promise<string[] | undefined> {
  const [row] = await sql<{ permissions: string[] }[]>`
    select permissions from consents
    where project_id = ${k.project_id} and user_id = ${k.user_id} and client_id = ${k.client_id}
      and coalesce(resource_id, '') = ${k.resource_id ?? ""}`;
  return row?.permissions;
}

/** Records a decision; a later one for the same user, client and API adds its permissions to the earlier ones. */
export async function upsertConsent(
  sql: Sql,
  k: {
    project_id: string;
    id: string;
    user_id: string;
    client_id: string;
    resource_id: string | null;
    permissions: string[];
  },
): Promise<{ id: string; permissions: string[] }> {
  const [row] = await sql<{ id: string; permissions: string[] }[]>`
    insert into consents (project_id, id, user_id, client_id, resource_id, permissions)
    values (${k.project_id}, ${k.id}, ${k.user_id}, ${k.client_id}, ${k.resource_id}, ${k.permissions})
    on conflict (project_id, user_id, client_id, coalesce(resource_id, '')) do update
      set permissions = array(select distinct p from unnest(consents.permissions || excluded.permissions) p order by p),
          updated_at = now()
    returning id, permissions`;
  return row;
}

/** The consents of a user, newest first, with their client's and API's names. */
export async function listUserConsents(sql: Sql, projectId: string, userId: string): Promise<ConsentRow[]> {
  return await sql<ConsentRow[]>`
    select ${COLUMNS(sql)}
    from consents k join clients c on c.id = k.client_id left join resources r on r.id = k.resource_id
    where k.project_id = ${projectId} and k.user_id = ${userId}
    order by k.updated_at desc, k.id`;
}

/**
 * Deletes a user's consent, and ends at once that client's sessions of the user (their refresh tokens are then
 * refused) and its codes not yet exchanged. Returns the deleted row, or undefined.
 */
export async function deleteConsent(
  sql: Sql,
  projectId: string,
  userId: string,
  consentId: string,
): Promise<{ client_id: string; resource_id: string | null } | undefined> {
  const [row] = await sql<{ client_id: string; resource_id: string | null }[]>`
    delete from consents where project_id = ${projectId} and user_id = ${userId} and id = ${consentId}
    returning client_id, resource_id`;
  if (!row) return undefined;
  await sql`
    update sessions set revoked_at = now()
    where project_id = ${projectId} and user_id = ${userId} and client_id = ${row.client_id} and revoked_at is null`;
  await sql`
    update authorization_codes set used_at = now()
    where project_id = ${projectId} and user_id = ${userId} and client_id = ${row.client_id} and used_at is null`;
  return row;
}

/** The resource an indicator names in the project, and the descriptions of its permissions. */
export async function findConsentResource(
  sql: Sql,
  projectId: string,
  indicator: string,
): Promise<
  { id: string; name: string; permissions: { code: string; description: string | null }[] } | undefined
> {
  const [row] = await sql<
    { id: string; name: string; permissions: { code: string; description: string | null }[] }[]
  >`
    select r.id, r.name,
           coalesce((select json_agg(json_build_object('code', p.code, 'description', p.description)
                                     order by p.code collate "C")
                     from permissions p where p.resource_id = r.id), '[]'::json) as permissions
    from resources r where r.project_id = ${projectId} and r.indicator = ${indicator}`;
  return row;
}

export type ConsentHold = { user_id: string; amr: string[] | null; provider_id: string | null; sso: boolean };

/** Holds a login page for the user's consent (the consent page's form posts against it). */
export async function holdForConsent(sql: Sql, requestId: string, h: ConsentHold): Promise<void> {
  await sql`
    update authorization_requests
    set consent_user_id = ${h.user_id}, consent_amr = ${h.amr}, consent_provider_id = ${h.provider_id},
        consent_sso = ${h.sso}
    where id = ${requestId} and used_at is null`;
}

/** The user a login page waits on for consent, or undefined. */
export async function heldForConsent(sql: Sql, requestId: string): Promise<ConsentHold | undefined> {
  const [row] = await sql<ConsentHold[]>`
    select consent_user_id as user_id, consent_amr as amr, consent_provider_id as provider_id, consent_sso as sso
    from authorization_requests where id = ${requestId} and consent_user_id is not null`;
  return row;
}

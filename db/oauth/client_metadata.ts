/**
 * Clients identified by the URL of their metadata document (domain/oauth/client_metadata.ts): one row per URL
 * and project, recorded on first use, with the document's name and redirect URIs and when to fetch it again.
 */
import type { ClientMetadataDocuments } from "../../openapi/projects.ts";
import type { Sql } from "../connection.ts";

/** What a project decides for URL clients, and whether it is active. */
export async function findMetadataPolicy(
  sql: Sql,
  projectId: string,
): Promise<{ client_metadata_documents: ClientMetadataDocuments; is_active: boolean } | undefined> {
  const [row] = await sql<{ client_metadata_documents: ClientMetadataDocuments; is_active: boolean }[]>`
    select client_metadata_documents, is_active from projects where id = ${projectId}`;
  return row;
}

/** Whether some active project admits clients of metadata documents. */
export async function anyProjectAdmitsDocuments(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ any: boolean }[]>`
    select exists (select 1 from projects where is_active and client_metadata_documents <> '"off"') as any`;
  return row.any;
}

/** The project's row of this URL: its id, whether it is blocked, and whether its document is still fresh. */
export async function findMetadataClient(
  sql: Sql,
  projectId: string,
  url: string,
): Promise<{ id: string; is_active: boolean; fresh: boolean } | undefined> {
  const [row] = await sql<{ id: string; is_active: boolean; fresh: boolean }[]>`
    select id, is_active, metadata_expires_at > now() as fresh
    from clients where metadata_url = ${url} and project_id = ${projectId}`;
  return row;
}

/** Every project's row of this URL (the token endpoint picks the one its code or refresh token names). */
export async function findMetadataClients(
  sql: Sql,
  url: string,
): Promise<{ id: string; project_id: string }[]> {
  return await sql<{ id: string; project_id: string }[]>`
    select id, project_id from clients where metadata_url = ${url} order by project_id`;
}

/**
 * Records the URL's client in the project, or refreshes what its document says (name, redirect URIs) and when to
 * fetch it again. `inserted`: the row is new (two instances recording it at once make one row).
 */
export async function upsertMetadataClient(
  sql: Sql,
  c: {
    project_id: string;
    id: string;
    url: string;
    name: string;
    redirect_uris: string[];
    secret_hash: Uint8Array;
    fresh_for_seconds: number;
  },
): Promise<{ id: string; inserted: boolean }> {
  const [row] = await sql<{ id: string; inserted: boolean }[]>`
    insert into clients (project_id, id, name, description, secret_hash, token_endpoint_auth_method, redirect_uris,
                         third_party, metadata_url, metadata_expires_at, last_used_at)
    values (${c.project_id}, ${c.id}, ${c.name}, null, ${c.secret_hash}, 'none', ${c.redirect_uris}, true,
            ${c.url}, now() + make_interval(secs => ${c.fresh_for_seconds}), now())
    on conflict (metadata_url, project_id) where metadata_url is not null do update
      set name = excluded.name, redirect_uris = excluded.redirect_uris,
          metadata_expires_at = excluded.metadata_expires_at, last_used_at = now(),
          updated_at = case when clients.name is distinct from excluded.name
                              or clients.redirect_uris is distinct from excluded.redirect_uris
                            then now() else clients.updated_at end
    returning id, (xmax = 0) as inserted`;
  return row;
}

/** The URL client's last use: an authorization request or a token request. */
export async function touchMetadataClient(sql: Sql, clientId: string): Promise<void> {
  await sql`update clients set last_used_at = now() where id = ${clientId}`;
}

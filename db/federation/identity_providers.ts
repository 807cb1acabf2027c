/** Queries on identity providers, the external identities linked to users, and upstream logins under way. */
import type { PageOf } from "../../openapi/fields.ts";
import type { ExternalIdentity, IdentityProviderListQuery } from "../../openapi/identity_providers.ts";
import { fixed, isoText, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, offsetOf, pageOf } from "../lists.ts";

/** A provider as stored; the domain makes the API's shape of it (the redirect URI needs the public URL). */
export type ProviderRow = {
  id: string;
  project_id: string;
  kind: "oidc";
  preset: "google" | "microsoft_entra_id" | null;
  display_name: string;
  issuer: string;
  client_id: string;
  client_secret: string | null;
  client_secret_sealed: Uint8Array | null;
  scopes: string[];
  claim_email: string;
  claim_name: string;
  claim_picture: string;
  jit_provisioning: boolean;
  default_role_id: string | null;
  link_by_verified_email: boolean;
  is_active: boolean;
  /** The organization whose own sign-in it is, or null (the project's). */
  organization_id: string | null;
  metadata: Record<string, unknown>;
  metadata_fetched_at: string;
  created_at: string;
  updated_at: string;
};

export type ProviderFields = Omit<
  ProviderRow,
  "id" | "project_id" | "metadata_fetched_at" | "created_at" | "updated_at"
>;

const COLUMNS = `p.id, p.project_id, p.kind, p.preset, p.display_name, p.issuer, p.client_id, p.client_secret,
  p.client_secret_sealed, p.scopes, p.claim_email, p.claim_name, p.claim_picture, p.jit_provisioning,
  p.default_role_id, p.link_by_verified_email, p.is_active, p.organization_id, p.metadata, ${
  isoText("p.metadata_fetched_at")
} as metadata_fetched_at, ${timestampsText("p")}`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

export async function insertProvider(
  sql: Sql,
  p: ProviderFields & { project_id: string; id: string },
): Promise<void> {
  await sql`
    insert into identity_providers (project_id, id, kind, preset, display_name, issuer, client_id, client_secret,
      client_secret_sealed, scopes, claim_email, claim_name, claim_picture, jit_provisioning, default_role_id,
      link_by_verified_email, is_active, organization_id, metadata, metadata_fetched_at)
    values (${p.project_id}, ${p.id}, ${p.kind}, ${p.preset}, ${p.display_name}, ${p.issuer}, ${p.client_id},
      ${p.client_secret}, ${p.client_secret_sealed}, ${p.scopes}, ${p.claim_email}, ${p.claim_name},
      ${p.claim_picture}, ${p.jit_provisioning}, ${p.default_role_id}, ${p.link_by_verified_email}, ${p.is_active},
      ${p.organization_id}, ${sql.json(p.metadata as never)}, now())`;
}

export async function updateProviderRow(
  sql: Sql,
  projectId: string,
  id: string,
  p: ProviderFields,
): Promise<void> {
  await sql`
    update identity_providers set display_name = ${p.display_name}, issuer = ${p.issuer},
      client_id = ${p.client_id}, client_secret = ${p.client_secret}, client_secret_sealed = ${p.client_secret_sealed},
      scopes = ${p.scopes}, claim_email = ${p.claim_email}, claim_name = ${p.claim_name},
      claim_picture = ${p.claim_picture}, jit_provisioning = ${p.jit_provisioning},
      default_role_id = ${p.default_role_id}, link_by_verified_email = ${p.link_by_verified_email},
      is_active = ${p.is_active}, organization_id = ${p.organization_id},
      metadata = ${sql.json(p.metadata as never)}, metadata_fetched_at = now(),
      updated_at = now()
    where project_id = ${projectId} and id = ${id}`;
}

/** A refreshed discovery document (the provider's settings unchanged). */
export async function updateProviderMetadata(
  sql: Sql,
  projectId: string,
  id: string,
  metadata: Record<string, unknown>,
): Promise<void> {
  await sql`
    update identity_providers set metadata = ${sql.json(metadata as never)}, metadata_fetched_at = now()
    where project_id = ${projectId} and id = ${id}`;
}

export async function findProvider(
  sql: Sql,
  projectId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<ProviderRow | undefined> {
  const [row] = await sql<ProviderRow[]>`
    select ${columns(sql)} from identity_providers p where p.project_id = ${projectId} and p.id = ${id}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

export async function listProviderRows(
  sql: Sql,
  projectId: string,
  q: IdentityProviderListQuery,
): Promise<PageOf<ProviderRow>> {
  const where = sql`
    where p.project_id = ${projectId}
    ${
    q.search
      ? sql`and (p.display_name ilike ${containsPattern(q.search)} or p.issuer ilike ${
        containsPattern(q.search)
      })`
      : sql``
  }
    ${q.is_active === undefined ? sql`` : sql`and p.is_active = ${q.is_active}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(ProviderRow & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from identity_providers p ${where}
      order by ${sql("p." + q.sort_by)} ${dir}, p.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from identity_providers p ${where}`,
  );
}

/** The buttons of a login page: the project's active providers, by name. */
/**
 * The active providers a login page offers: the project's own, and, for a sign-in to an organization, that
 * organization's (another organization's never show).
 */
export async function listActiveProviders(
  sql: Sql,
  projectId: string,
  organizationId: string | null = null,
): Promise<{ id: string; display_name: string; organization_id: string | null }[]> {
  return await sql<{ id: string; display_name: string; organization_id: string | null }[]>`
    select id, display_name, organization_id from identity_providers
    where project_id = ${projectId} and is_active
      and (organization_id is null or organization_id = ${organizationId})
    order by organization_id is null, display_name, id limit 20`;
}

/**
 * The active provider of the organization that holds this email domain (the first, when it has several), for a
 * sign-in that starts with an address: undefined when no organization of the project has the domain, or it has
 * no active provider.
 */
export async function findDomainProvider(
  sql: Sql,
  projectId: string,
  domain: string,
): Promise<{ id: string; organization_id: string } | undefined> {
  const [row] = await sql<{ id: string; organization_id: string }[]>`
    select p.id, p.organization_id from organization_domains d
    join identity_providers p on p.project_id = d.project_id and p.organization_id = d.organization_id
    where d.project_id = ${projectId} and d.domain = ${domain} and p.is_active
    order by p.created_at, p.id limit 1`;
  return row;
}

/** The organization's active providers, the oldest first. */
export async function listOrganizationProviders(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<{ id: string }[]> {
  return await sql<{ id: string }[]>`
    select id from identity_providers
    where project_id = ${projectId} and organization_id = ${organizationId} and is_active
    order by created_at, id limit 2`;
}

export async function deleteProviderRow(sql: Sql, projectId: string, id: string): Promise<void> {
  await sql`delete from identity_providers where project_id = ${projectId} and id = ${id}`;
}

// ---- External identities ----

const IDENTITY_COLUMNS = `e.provider_id, p.display_name as provider_display_name, e.subject, e.email,
  ${isoText("e.created_at")} as created_at, ${isoText("e.last_login_at")} as last_login_at`;

export async function listIdentities(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<ExternalIdentity[]> {
  return await sql<ExternalIdentity[]>`
    select ${fixed(sql, IDENTITY_COLUMNS)}
    from external_identities e join identity_providers p on p.project_id = e.project_id and p.id = e.provider_id
    where e.project_id = ${projectId} and e.user_id = ${userId}
    order by e.created_at, e.provider_id`;
}

export async function findIdentity(
  sql: Sql,
  projectId: string,
  providerId: string,
  userId: string,
): Promise<ExternalIdentity | undefined> {
  const [row] = await sql<ExternalIdentity[]>`
    select ${fixed(sql, IDENTITY_COLUMNS)}
    from external_identities e join identity_providers p on p.project_id = e.project_id and p.id = e.provider_id
    where e.project_id = ${projectId} and e.provider_id = ${providerId} and e.user_id = ${userId}`;
  return row;
}

/** The user linked to (provider, subject), with what a login needs of them. */
export async function findLinkedUser(
  sql: Sql,
  projectId: string,
  providerId: string,
  subject: string,
): Promise<{ id: string; is_active: boolean } | undefined> {
  const [row] = await sql<{ id: string; is_active: boolean }[]>`
    select u.id, u.is_active from external_identities e
    join users u on u.project_id = e.project_id and u.id = e.user_id
    where e.project_id = ${projectId} and e.provider_id = ${providerId} and e.subject = ${subject}`;
  return row;
}

/** The user with this (normalized) email, with whether the service holds it verified. */
export async function findUserByEmail(
  sql: Sql,
  projectId: string,
  email: string,
): Promise<{ id: string; is_active: boolean; email_verified: boolean } | undefined> {
  const [row] = await sql<{ id: string; is_active: boolean; email_verified: boolean }[]>`
    select id, is_active, email_verified from users where project_id = ${projectId} and email = ${email}`;
  return row;
}

export async function insertIdentity(
  sql: Sql,
  i: { project_id: string; provider_id: string; subject: string; user_id: string; email: string | null },
): Promise<void> {
  await sql`
    insert into external_identities (project_id, provider_id, subject, user_id, email)
    values (${i.project_id}, ${i.provider_id}, ${i.subject}, ${i.user_id}, ${i.email})`;
}

export async function touchIdentity(
  sql: Sql,
  projectId: string,
  providerId: string,
  subject: string,
  email: string | null,
): Promise<void> {
  await sql`
    update external_identities set last_login_at = now(), email = coalesce(${email}, email)
    where project_id = ${projectId} and provider_id = ${providerId} and subject = ${subject}`;
}

export async function deleteIdentity(
  sql: Sql,
  projectId: string,
  providerId: string,
  userId: string,
): Promise<void> {
  await sql`
    delete from external_identities
    where project_id = ${projectId} and provider_id = ${providerId} and user_id = ${userId}`;
}

/** How many ways the user has to sign in: a password, and each linked identity. */
export async function signInMethods(sql: Sql, projectId: string, userId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select (select count(*) from external_identities where project_id = ${projectId} and user_id = ${userId})::int
      + (select count(*) from users where project_id = ${projectId} and id = ${userId}
           and password_hash is not null)::int as n`;
  return row.n;
}

// ---- Upstream logins under way ----

export async function insertFederationState(
  sql: Sql,
  s: {
    state_hash: Uint8Array;
    project_id: string;
    provider_id: string;
    /** A login's: its login page's request. */
    request_id: string | null;
    /** A re-authentication's, from the account page: the browser session and its user. */
    reauth?: { session_id: string; user_id: string };
    nonce: string;
    code_verifier: string;
    ttlSeconds: number;
  },
): Promise<void> {
  await sql`
    insert into federation_states (state_hash, project_id, provider_id, request_id, reauth_session_id, user_id,
                                   nonce, code_verifier, expires_at)
    values (${s.state_hash}, ${s.project_id}, ${s.provider_id}, ${s.request_id}, ${
    s.reauth?.session_id ?? null
  },
            ${s.reauth?.user_id ?? null}, ${s.nonce}, ${s.code_verifier},
            now() + make_interval(secs => ${s.ttlSeconds}))`;
}

export type FederationStateRow = {
  project_id: string;
  provider_id: string;
  /** Null for a re-authentication from the account page. */
  request_id: string | null;
  reauth_session_id: string | null;
  user_id: string | null;
  nonce: string;
  code_verifier: string;
  created_at: Date;
};

/** Whether the state, unspent, is a re-authentication's (the callback then is not a login). */
export async function isReauthState(sql: Sql, stateHash: Uint8Array): Promise<boolean> {
  const [row] = await sql<{ reauth: boolean }[]>`
    select reauth_session_id is not null as reauth from federation_states where state_hash = ${stateHash}`;
  return row?.reauth ?? false;
}

/**
 * Spends the state in one statement: of concurrent callbacks with it exactly one gets the row; an unknown,
 * spent or expired state gets nothing (and `spent` says which, for the audit).
 */
export async function consumeFederationState(
  sql: Sql,
  stateHash: Uint8Array,
): Promise<{ row: FederationStateRow | null; known: { project_id: string; provider_id: string } | null }> {
  const [row] = await sql<FederationStateRow[]>`
    update federation_states set used_at = now()
    where state_hash = ${stateHash} and used_at is null and expires_at > now()
    returning project_id, provider_id, request_id, reauth_session_id, user_id, nonce, code_verifier, created_at`;
  if (row) return { row, known: row };
  const [known] = await sql<{ project_id: string; provider_id: string }[]>`
    select project_id, provider_id from federation_states where state_hash = ${stateHash}`;
  return { row: null, known: known ?? null };
}

/** A login page's CSRF token replaced (the form is shown again after an upstream failure). */
export async function replaceCsrf(sql: Sql, requestId: string, csrfHash: Uint8Array): Promise<void> {
  await sql`update authorization_requests set csrf_hash = ${csrfHash} where id = ${requestId} and used_at is null`;
}

/** The project of a provider, by its id alone (a callback names only the provider). */
export async function providerProject(sql: Sql, id: string): Promise<string | undefined> {
  const [row] = await sql<
    { project_id: string }[]
  >`select project_id from identity_providers where id = ${id}`;
  return row?.project_id;
}

/** Whether any organization of the project has an active provider of its own (the login page then offers it). */
export async function organizationProvidersExist(sql: Sql, projectId: string): Promise<boolean> {
  const rows = await sql`
    select 1 from identity_providers where project_id = ${projectId} and is_active and organization_id is not null
    limit 1`;
  return rows.length > 0;
}

/** Queries on clients and their direct permission grants; a client row is the API's `Client`. */
import type {
  Client,
  ClientListQuery,
  DecisionClaim,
  TokenEndpointAuthMethod,
} from "../../openapi/clients.ts";
import type { Properties } from "../../openapi/fields.ts";
import type { ClientMetadataDocuments } from "../../openapi/projects.ts";
import { fixed, isoText, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";
import { batchedRead, byOrdinal } from "../batch.ts";
import { CURRENT_KID } from "../keys/keys.ts";
import { type ThrottlePolicy, waitOfRowText } from "../shared/throttle.ts";

const COLUMNS =
  `c.id, c.project_id, c.name, c.description, c.is_active, c.is_admin, c.token_endpoint_auth_method,
      c.redirect_uris, c.post_logout_redirect_uris, c.third_party, c.device_grant, c.decision_reasons,
      c.decision_claims, c.metadata_url, ${isoText("c.last_used_at")} as last_used_at,
      array(select cp.permission_id from client_permissions cp where cp.client_id = c.id order by cp.permission_id)
        as permission_ids,
      case when c.delegation then json_build_object('permission_ids', array(select d.permission_id
        from client_delegations d where d.client_id = c.id order by d.permission_id)) end as delegation,
      c.may_act, c.properties,
      ${timestampsText("c")}`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

export async function insertClient(
  sql: Sql,
  c: {
    project_id: string;
    id: string;
    name: string;
    description: string | null;
    secret_hash: Uint8Array;
    is_active?: boolean;
    is_admin?: boolean;
    token_endpoint_auth_method?: TokenEndpointAuthMethod;
    redirect_uris?: string[];
    post_logout_redirect_uris?: string[];
    third_party?: boolean;
    device_grant?: boolean;
    decision_reasons?: boolean;
    decision_claims?: DecisionClaim[];
    properties?: Properties;
  },
): Promise<void> {
  await sql`
    insert into clients (project_id, id, name, description, secret_hash, is_active, is_admin, token_endpoint_auth_method,
                         redirect_uris, post_logout_redirect_uris, third_party, device_grant, decision_reasons,
                         decision_claims, properties)
    values (${c.project_id}, ${c.id}, ${c.name}, ${c.description}, ${c.secret_hash}, ${c.is_active ?? true},
            ${c.is_admin ?? false}, ${c.token_endpoint_auth_method ?? "none"}, ${c.redirect_uris ?? []},
            ${c.post_logout_redirect_uris ?? []}, ${c.third_party ?? false}, ${c.device_grant ?? false},
            ${c.decision_reasons ?? true}, ${sql.json(c.decision_claims ?? [])}, ${
    sql.json(c.properties ?? {})
  })`;
}

/** Grants every permission of the project's default resources (the project's admin client). */
export async function grantDefaultPermissions(sql: Sql, projectId: string, clientId: string): Promise<void> {
  await sql`
    insert into client_permissions (project_id, client_id, permission_id)
    select p.project_id, ${clientId}, p.id
    from permissions p join resources r on r.id = p.resource_id
    where p.project_id = ${projectId} and r.is_default`;
}

export async function findClient(
  sql: Sql,
  projectId: string,
  clientId: string,
  opts: { lock?: boolean } = {},
): Promise<Client | undefined> {
  const [row] = await sql<Client[]>`
    select ${columns(sql)} from clients c
    where c.project_id = ${projectId} and c.id = ${clientId} and not c.is_console
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

export async function updateClientSecret(
  sql: Sql,
  projectId: string,
  clientId: string,
  secretHash: Uint8Array,
): Promise<boolean> {
  const rows = await sql`
    update clients set secret_hash = ${secretHash}, tokens_valid_after = clock_timestamp(), updated_at = now()
    where project_id = ${projectId} and id = ${clientId}
    returning id`;
  return rows.length === 1;
}

/**
 * Moves a client's token cut-off to now, after the transaction that set it has committed: a token request
 * that read the client before that commit was stamped before it, so it is refused too.
 */
export async function restampClientCutoff(sql: Sql, clientId: string): Promise<void> {
  await sql`update clients set tokens_valid_after = clock_timestamp() where id = ${clientId}`;
}

/** A client with what its project decides for it: authentication, the login page, the token endpoint. */
export type ClientWithProjectRow = {
  id: string;
  project_id: string;
  secret_hash: Uint8Array;
  is_active: boolean;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  /** The client's name, shown on the consent page. */
  name: string;
  /** Marked by an admin as another party's application: its users consent (domain/signin/consent.ts). */
  third_party: boolean;
  /** May use the device authorization grant (RFC 8628; domain/oauth/device_authorization.ts). */
  device_grant: boolean;
  /** A client identified by the URL of its metadata document (domain/oauth/client_metadata.ts): that URL. */
  metadata_url: string | null;
  /** The searches whose answers its users' tokens carry (domain/oauth/decision_claims.ts); null: none. */
  decision_claims: DecisionClaim[] | null;
  /** What its project decides for such clients. */
  project_client_metadata_documents: ClientMetadataDocuments;
  /** Whether it may act for others (token exchange, db/oauth/delegated_tokens.ts). */
  delegation: boolean;
  /** The one client that may exchange its tokens (RFC 8693 `may_act`), or null. */
  may_act: string | null;
  project_name: string;
  project_is_active: boolean;
  /**
   * The registered lists, the client's own and its project's: which one applies is decided in one place,
   * domain/projects/redirect_uris.ts (the client's when it has one, else the project's).
   */
  client_redirect_uris: string[];
  project_redirect_uris: string[];
  /** Where the applications may send the browser after a logout (OpenID Connect), as above. */
  client_post_logout_redirect_uris: string[];
  project_post_logout_redirect_uris: string[];
  /** The database's clock, which stamps tokens so that every instance compares one clock with itself. */
  now: Date;
  /** The signing key that signs now. */
  current_kid: string;
  /** With a throttle key: seconds the key must still wait, and whether it has failures on record. */
  throttle_wait: number | null;
  throttle_failures: boolean;
};

/**
 * The client and its project in one query, with the throttle state of `throttle` when given (one row read).
 * On the pool, the lookups asked for in one turn of the event loop share one statement (db/batch.ts).
 */
export function findClientWithProject(
  sql: Sql,
  clientId: string,
  throttle?: { key: string; policy: ThrottlePolicy },
): Promise<ClientWithProjectRow | undefined> {
  return lookupsOf(throttle?.policy ?? null)(sql, { clientId, throttleKey: throttle?.key ?? null });
}

type Lookup = { clientId: string; throttleKey: string | null };

/** One batched reader per throttle policy (its SQL is text written once, db/shared/throttle.ts). */
const lookups = new Map<
  ThrottlePolicy | null,
  (sql: Sql, l: Lookup) => Promise<ClientWithProjectRow | undefined>
>();

function lookupsOf(policy: ThrottlePolicy | null) {
  let read = lookups.get(policy);
  if (!read) {
    read = batchedRead(lookupStatement(policy));
    lookups.set(policy, read);
  }
  return read;
}

/**
 * The statement of a batch: the i-th lookup's row carries n = i + 1. A lookup without a throttle key joins no
 * counter row, and its wait is null. Each lookup reads its client, project and counter by primary key (a
 * lateral subquery each, so that the plan stays index lookups whatever the batch's size).
 */
function lookupStatement(policy: ThrottlePolicy | null) {
  const text = `
    select v.n::int as n, x.*, now() as now, ${CURRENT_KID} as current_kid,
           ${policy ? waitOfRowText(policy) : "null::int"} as throttle_wait,
           f.key is not null as throttle_failures
    from unnest($1::text[], $2::text[]) with ordinality as v (client_id, key, n)
    join lateral (
      select c.id, c.project_id, c.secret_hash, c.is_active, c.token_endpoint_auth_method, c.name, c.third_party,
             c.device_grant, c.metadata_url,
             -- No JSON to parse for a client without decision claims (every client-credentials request reads this).
             nullif(c.decision_claims, '[]'::jsonb) as decision_claims,
             -- Read only for a client of a metadata document (no JSON to parse for any other).
             case when c.metadata_url is not null then p.client_metadata_documents end
               as project_client_metadata_documents,
             c.delegation, c.may_act,
             p.name as project_name, p.is_active as project_is_active,
             c.redirect_uris as client_redirect_uris, p.redirect_uris as project_redirect_uris,
             c.post_logout_redirect_uris as client_post_logout_redirect_uris,
             p.post_logout_redirect_uris as project_post_logout_redirect_uris
      from clients c join projects p on p.id = c.project_id
      where c.id = v.client_id
    ) x on true
    left join lateral (select * from login_failures lf where lf.key = v.key) f on true`;
  return async (sql: Sql, batch: Lookup[]) => {
    const rows = await sql.unsafe<(ClientWithProjectRow & { n: number })[]>(text, [
      batch.map((l) => l.clientId),
      batch.map((l) => l.throttleKey),
    ], { prepare: true });
    return byOrdinal(rows, batch.length);
  };
}

export async function updateClientRow(
  sql: Sql,
  projectId: string,
  clientId: string,
  c: {
    name: string;
    description: string | null;
    is_active: boolean;
    token_endpoint_auth_method: TokenEndpointAuthMethod;
    redirect_uris: string[];
    post_logout_redirect_uris: string[];
    third_party: boolean;
    device_grant: boolean;
    decision_reasons: boolean;
    decision_claims: DecisionClaim[];
    properties: Properties;
  },
): Promise<boolean> {
  const rows = await sql`
    update clients set name = ${c.name}, description = ${c.description}, is_active = ${c.is_active},
      token_endpoint_auth_method = ${c.token_endpoint_auth_method}, redirect_uris = ${c.redirect_uris},
      post_logout_redirect_uris = ${c.post_logout_redirect_uris}, third_party = ${c.third_party},
      device_grant = ${c.device_grant}, decision_reasons = ${c.decision_reasons},
      decision_claims = ${sql.json(c.decision_claims)}, properties = ${sql.json(c.properties)},
      tokens_valid_after = case when is_active and not ${c.is_active} then clock_timestamp() else tokens_valid_after end,
      updated_at = now()
    where project_id = ${projectId} and id = ${clientId} returning id`;
  return rows.length === 1;
}

/** The one client that may exchange the client's tokens (RFC 8693 `may_act`), or null. */
export async function setClientMayAct(
  sql: Sql,
  projectId: string,
  clientId: string,
  mayAct: string | null,
): Promise<void> {
  await sql`update clients set may_act = ${mayAct} where project_id = ${projectId} and id = ${clientId}`;
}

/** The client's delegation (token exchange): off (null), or on with exactly these permissions. */
export async function setClientDelegation(
  sql: Sql,
  projectId: string,
  clientId: string,
  ids: string[] | null,
): Promise<void> {
  await sql`update clients set delegation = ${
    ids !== null
  } where project_id = ${projectId} and id = ${clientId}`;
  await sql`delete from client_delegations where client_id = ${clientId}`;
  if (ids === null || ids.length === 0) return;
  await sql`insert into client_delegations ${
    sql(ids.map((permission_id) => ({ project_id: projectId, client_id: clientId, permission_id })))
  }`;
}

/** Replaces the client's direct grants with exactly these permissions. */
export async function setClientPermissions(
  sql: Sql,
  projectId: string,
  clientId: string,
  ids: string[],
): Promise<void> {
  await sql`delete from client_permissions where client_id = ${clientId}`;
  if (ids.length === 0) return;
  await sql`insert into client_permissions ${
    sql(ids.map((permission_id) => ({ project_id: projectId, client_id: clientId, permission_id })))
  }`;
}

/** The list's statement: one source for the list and for the read the gate attaches. */
export function clientListStatement(projectId: string, q: ClientListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where c.project_id = $1 and not c.is_console";
  if (q.search) where += ` and c.name ilike $${params.push(containsPattern(q.search))}`;
  if (q.is_active !== undefined) where += ` and c.is_active = $${params.push(q.is_active)}`;
  return pageStatement({ table: "clients", alias: "c" }, { columns: COLUMNS }, where, params, q);
}

/** Deletes the client: its sessions, codes, pending authorization requests and grants go with it. */
export async function deleteClientRow(sql: Sql, projectId: string, clientId: string): Promise<void> {
  await sql`delete from clients where project_id = ${projectId} and id = ${clientId} and not is_console`;
}

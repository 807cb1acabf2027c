/** The bearer-token gate's one query: is the token's subject live, and does it hold the permission? */
import type { AttachedRead } from "../lists.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { batchedRead, byOrdinal } from "../batch.ts";
import type { Sql } from "../connection.ts";

export type { AttachedRead };
export type GateRow = {
  path_project_exists: boolean | null;
  allowed: boolean;
  /** A client-credentials token of the project's admin client. */
  is_admin: boolean;
  /** Whether the token's client wants its decisions' reasons (clients.decision_reasons; true for an exchange's). */
  decision_reasons: boolean;
  /**
   * The attached read's one value: a record as JSON (parsed), or a page as the JSON text of the answer
   * (db/lists.ts). Null when it found nothing, and when the token lacks the permission or the path's project
   * does not exist (it is then not run at all).
   */
  record?: unknown;
};

export type GateQuery = {
  projectId: string;
  clientId: string;
  subject: string;
  /** Present on user tokens only. */
  sessionId?: string;
  jti: string;
  /** The key that signed it: it must still be published (not retired, not revoked). */
  kid: string;
  /** When the token was signed (from its UUIDv7 jti, to the millisecond). */
  issuedAt: Date;
  /** Its `exp`, seconds since the epoch: compared with the database's clock, as its `iat` was stamped by it. */
  expiresAt: number;
  pathProjectId: string | null;
  /** A default resource's permission, or null when a live token is all the operation needs. */
  permission: { resource: string; code: string } | null;
  /** A token of an exchange (its `act` claim): its row in delegated_tokens decides (DELEGATED below). */
  delegated?: boolean;
  /** A user token of an organization (`org_id`): live while the user is a member of it. */
  organizationId?: string | null;
};

/**
 * The gate's statement for a client's token or a user's, written once as text: it builds as cheaply as a flat
 * SELECT (db/columns.ts on what nested fragments cost). What varies from one operation to the next (the path's
 * project, the permission or none) is a parameter that may be null. From the project's default resource by its
 * unique (project, lower(code)) index, to its permission by (resource, lower(code)), to the grant by its
 * primary key: three index probes, however many projects. Default resources and their permissions have
 * lower-case codes. Expired by the database's clock; revoked by jti or by its key; or issued before its client
 * or project was deactivated or the client's secret rotated. (One statement for both kinds of token, the
 * session and user left-joined, cost PostgreSQL about 25 µs more per request.)
 *
 * Parameters: $1 path project, $2 resource code, $3 permission code, $4 client, $5 token's project, $6 exp,
 * $7 jti, $8 kid, $9 issued at; a user token's $10 session, $11 user and $12 organization (null for none).
 */
function gateStatement(kind: { grants: string; isAdmin: string; joins: string; live: string }): string {
  return `
    select case when $1::text is null then null
                else exists (select 1 from projects where id = $1::text) end as path_project_exists,
           case when $2::text is null then true else exists (
             select 1 from resources r
             join permissions pe on pe.resource_id = r.id and lower(pe.code) = $3::text
             where r.project_id = p.id and lower(r.code) = $2::text and r.is_default
               and exists (${kind.grants} offset 0)
           ) end as allowed,
           ${kind.isAdmin} as is_admin, c.decision_reasons
    from projects p
    join clients c on c.project_id = p.id and c.id = $4::text
    ${kind.joins}
    where p.id = $5::text and p.is_active and c.is_active ${kind.live}
      and $6::bigint > extract(epoch from now())
      and not exists (select 1 from revoked_access_tokens x where x.jti = $7::text)
      and exists (select 1 from signing_keys k where k.kid = $8::text and k.state in ('next', 'current', 'previous'))
      and (c.tokens_valid_after is null or $9::timestamptz > c.tokens_valid_after)
      and (p.tokens_valid_after is null or $9::timestamptz > p.tokens_valid_after)`;
}

/** A client holds permissions directly; a user through the role, and only while its session is live. */
const GATE = {
  client: gateStatement({
    grants: "select from client_permissions g where g.client_id = c.id and g.permission_id = pe.id",
    isAdmin: "c.is_admin",
    joins: "",
    live: "",
  }),
  user: gateStatement({
    // A permission the role holds under a condition is not held here: the gate has no entities to read.
    grants:
      "select from role_permissions g where g.role_id = u.role_id and g.permission_id = pe.id and g.condition is null",
    isAdmin: "false",
    joins: `join sessions s on s.project_id = p.id and s.id = $10::text and s.client_id = c.id
    join users u on u.project_id = p.id and u.id = s.user_id and u.id = $11::text`,
    // A token of an organization only while its user is a member, of the membership it was issued in (removal
    // refuses it at once, and adding the user back does not revive it).
    live: `and u.is_active and s.revoked_at is null and s.expires_at > now()
      and ($12::text is null or exists (select from organization_members m
                                        where m.organization_id = $12::text and m.user_id = u.id and m.project_id = p.id
                                          and date_trunc('milliseconds', m.created_at) <= $9::timestamptz))`,
  }),
};

/**
 * The gate's statement for a token of an exchange (RFC 8693), by its row in delegated_tokens: live while its
 * subject is (a user's session and the user, or a client), while every actor of its chain is active with its
 * delegation on, while neither it nor a token it derives from is revoked and the user has not revoked the agent;
 * a permission is held when the subject holds it, every actor's delegation has it, and the exchange asked for it.
 * Parameters: those of the others, then $10 the subject.
 */
const DELEGATED = `
    select case when $1::text is null then null
                else exists (select 1 from projects where id = $1::text) end as path_project_exists,
           case when $2::text is null then true else exists (
             select 1 from resources r
             join permissions pe on pe.resource_id = r.id and lower(pe.code) = $3::text
             where r.project_id = p.id and lower(r.code) = $2::text and r.is_default
               and (dt.permission_ids is null or pe.id = any(dt.permission_ids))
               and (dt.resource_id is null or pe.resource_id = dt.resource_id)
               and case when dt.subject_type = 'user'
                        then exists (select from role_permissions g where g.role_id = u.role_id and g.permission_id = pe.id
                                     and g.condition is null)
                        else exists (select from client_permissions g where g.client_id = dt.subject_id
                                     and g.permission_id = pe.id) end
               and not exists (select from unnest(dt.actors) a (id) where not exists (
                     select from client_delegations d where d.client_id = a.id and d.permission_id = pe.id))
           ) end as allowed,
           false as is_admin, true as decision_reasons
    from delegated_tokens dt
    join projects p on p.id = dt.project_id
    join clients sc on sc.project_id = p.id and sc.id = dt.subject_client_id
    left join sessions s on s.project_id = p.id and s.id = dt.session_id
    left join users u on u.project_id = p.id and u.id = s.user_id
    where dt.jti = $7::text and p.id = $5::text and dt.actors[1] = $4::text and dt.subject_id = $10::text
      and dt.revoked_at is null and p.is_active and sc.is_active
      -- Of an organization: only while its user is a member, in a membership older than this token.
      and (dt.organization_id is null or exists (
        select from organization_members m where m.project_id = p.id and m.organization_id = dt.organization_id
          and m.user_id = dt.subject_id and date_trunc('milliseconds', m.created_at) <= $9::timestamptz))
      and case when dt.subject_type = 'user'
               then u.id = dt.subject_id and u.is_active and s.revoked_at is null and s.expires_at > now()
               else dt.subject_id = dt.subject_client_id end
      and (sc.tokens_valid_after is null or dt.subject_issued_at > sc.tokens_valid_after)
      and not exists (select from unnest(dt.actors) a (id) join clients ac on ac.id = a.id
                      where not ac.is_active or not ac.delegation
                         or (ac.tokens_valid_after is not null and $9::timestamptz <= ac.tokens_valid_after))
      and (select count(*) from clients ac where ac.id = any(dt.actors))
          = (select count(distinct a) from unnest(dt.actors) a)
      and $6::bigint > extract(epoch from now())
      and not exists (select 1 from revoked_access_tokens x where x.jti = $7::text or x.jti = any(dt.ancestors))
      and exists (select 1 from signing_keys k where k.kid = $8::text and k.state in ('next', 'current', 'previous'))
      and (p.tokens_valid_after is null or $9::timestamptz > p.tokens_valid_after)`;

type Kind = "client" | "user" | "delegated";
const STATEMENTS: Record<Kind, string> = { ...GATE, delegated: DELEGATED };

/**
 * The gate's statement with a read attached after its own parameters, written once per gate and read. By kind,
 * then by the read's text: a read's text is mostly one constant string, whose hash V8 keeps, where a key joined
 * from the two would be a new string of kilobytes to build and hash on every request.
 */
const attached: Record<Kind, Map<string, string>> = {
  client: new Map(),
  user: new Map(),
  delegated: new Map(),
};

function withRead(kind: Kind, offset: number, read: string): string {
  let text = attached[kind].get(read);
  if (text === undefined) {
    const renumbered = read.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`);
    // Never for another project's token, unless the system project's (which the gate then checks further).
    // Materialized: inlined, the gate's row would be computed again for each use of its columns (the permission's
    // subquery and the path project's probe twice).
    text = `with g as materialized (${STATEMENTS[kind]})
    select g.path_project_exists, g.allowed, g.is_admin, g.decision_reasons,
           case when g.allowed and g.path_project_exists is not false
                 and ($1::text is null or $1::text = $5::text or $5::text = '${SYSTEM_PROJECT_ID}')
                then (${renumbered}) end as record
    from g`;
    attached[kind].set(read, text);
  }
  return text;
}

/**
 * One round trip per request, the attached read included. A row comes back only when the token's project and
 * client are active, the token was not revoked, and, for a user token, its session is live and its user
 * active. `allowed` says whether the subject holds the permission: a client directly, a user through the role.
 * On the pool, the gates asked for in one turn of the event loop with the same statement share one (below),
 * and a gate asked again in that turn with the same parameters (a token's repeated request) is read once.
 */
export function findLivePrincipal(
  sql: Sql,
  t: GateQuery,
  read?: AttachedRead,
): Promise<GateRow | undefined> {
  const user = t.sessionId !== undefined;
  // A client-credentials token: the client is the subject (a token of an exchange names its subject apart).
  if (!t.delegated && !user && t.subject !== t.clientId) return Promise.resolve(undefined);
  const params: Param[] = [
    t.pathProjectId,
    t.permission?.resource ?? null,
    t.permission?.code ?? null,
    t.clientId,
    t.projectId,
    t.expiresAt,
    t.jti,
    t.kid,
    t.issuedAt,
    ...(t.delegated ? [t.subject] : user ? [t.sessionId!, t.subject, t.organizationId ?? null] : []),
  ];
  const kind: Kind = t.delegated ? "delegated" : user ? "user" : "client";
  const text = read ? withRead(kind, params.length, read.text) : STATEMENTS[kind];
  const all = read ? [...params, ...read.params] : params;
  return gateOf(text, all.map(typeOf))(sql, all.map(textOf));
}

type Param = string | number | boolean | null | Date;

/**
 * The type a parameter is given in the batched statement, from its value: the statement texts are this code's,
 * and a slot holds the same kind of value for every request (a null slot is text, and the statements cast the
 * slots that may be null themselves).
 */
function typeOf(v: Param): string {
  if (v === null || typeof v === "string") return "text";
  if (typeof v === "boolean") return "boolean";
  if (v instanceof Date) return "timestamptz";
  return Number.isInteger(v) ? "int8" : "float8";
}

function textOf(v: Param): string | null {
  if (v === null || typeof v === "string") return v;
  if (v instanceof Date) return v.toISOString();
  return String(v);
}

/** The parameters' texts as one string, for the batch to ask a repeated gate once (db/batch.ts). */
function sameParams(texts: (string | null)[]): string {
  let k = "";
  for (const t of texts) k += t === null ? "-," : `${t.length}:${t},`;
  return k;
}

/**
 * One batched reader per statement text, then per parameter types. The texts are the gate's own strings,
 * looked up as they are (a key joined from text and types would be a new string of a kilobyte or more to
 * hash on every request).
 */
const gates = new Map<
  string,
  Map<string, (sql: Sql, texts: (string | null)[]) => Promise<GateRow | undefined>>
>();

/**
 * The gate's statement for a batch (db/batch.ts): each request's parameters are the i-th element of one array
 * per slot, `unnest`ed with their ordinal, and the statement runs laterally for each, its `$n` the n-th slot
 * cast to its type. Its row (none when the token is not live) goes back to its request by the ordinal.
 */
function gateOf(text: string, types: string[]) {
  let byTypes = gates.get(text);
  if (!byTypes) {
    // Texts come from this code's operations and filters, a bounded set; the cap is a guard.
    if (gates.size >= 1000) gates.delete(gates.keys().next().value!);
    byTypes = new Map();
    gates.set(text, byTypes);
  }
  const key = types.join(",");
  let gate = byTypes.get(key);
  if (!gate) {
    const slots = types.map((_, i) => `p${i + 1}`);
    const batchText = `
      select v.n::int as n, x.*
      from unnest(${types.map((_, i) => `$${i + 1}::text[]`).join(", ")}) with ordinality as v (${
      slots.join(", ")
    }, n)
      join lateral (${text.replace(/\$(\d+)/g, (_, d) => `(v.p${d}::${types[Number(d) - 1]})`)}) x on true`;
    gate = batchedRead<(string | null)[], GateRow>(async (sql, batch) => {
      const rows = await sql.unsafe<(GateRow & { n: number })[]>(
        batchText,
        types.map((_, i) => batch.map((texts) => texts[i])),
        // A named statement, unless the pool runs behind a transaction pooler.
        { prepare: true },
      );
      return byOrdinal(rows, batch.length);
    }, sameParams);
    byTypes.set(key, gate);
  }
  return gate;
}

/**
 * The `resource:permission` codes a client (directly) or a user (through the role) holds now, sorted byte-wise:
 * `plain` those held outright, `conditional` those the role holds only under a condition. With an organization:
 * instead what the user's organization roles there hold (of the application's resources: never the service's
 * own, which they never give), which hold only on that organization's objects.
 */
export async function heldCodes(
  sql: Sql,
  subject: { clientId: string } | { userId: string; organizationId?: string | null },
): Promise<{ plain: string[]; conditional: string[] }> {
  const [table, owner, condition] = "clientId" in subject
    ? [sql`client_permissions`, sql`g.client_id = ${subject.clientId}`, sql`false`]
    : [
      sql`role_permissions`,
      subject.organizationId
        ? sql`g.role_id in (select role_id from organization_member_roles
                            where organization_id = ${subject.organizationId} and user_id = ${subject.userId})
              and not r.is_default`
        : sql`g.role_id = (select role_id from users where id = ${subject.userId})`,
      sql`g.condition is not null`,
    ];
  const rows = await sql<{ code: string; conditional: boolean }[]>`
    select r.code || ':' || pe.code as code, bool_and(${condition}) as conditional
    from ${table} g
    join permissions pe on pe.id = g.permission_id
    join resources r on r.id = pe.resource_id
    where ${owner}
    group by r.code, pe.code
    order by (r.code || ':' || pe.code) collate "C"`;
  return {
    plain: rows.filter((r) => !r.conditional).map((r) => r.code),
    conditional: rows.filter((r) => r.conditional).map((r) => r.code),
  };
}

/** The `resource:permission` codes a client or a user holds outright now, sorted byte-wise. */
export async function permissionCodes(
  sql: Sql,
  subject: { clientId: string } | { userId: string },
): Promise<string[]> {
  return (await heldCodes(sql, subject)).plain;
}

/**
 * Whose permissions: a client's direct grants, a user's through the role, a role's, given ids or default codes,
 * or those of the default resources.
 */
export type Holder =
  | { clientId: string }
  | { userId: string }
  | { roleId: string }
  | { permissionIds: string[] }
  | { codes: readonly string[] }
  | { defaultResources: true }
  /** A token of an exchange: what its subject holds, every actor's delegation has, and the exchange asked. */
  | { delegatedJti: string };

/**
 * The ids of the permissions a token of an exchange holds now (`jti`, its row in delegated_tokens): what its
 * subject holds (a user through the role, a client directly), within every actor's delegation, within what the
 * exchange asked for (its permissions, its API). With `projectId`, only a token of that project.
 */
export function delegatedPermissionIds(sql: Sql, jti: string, projectId?: string) {
  return sql`select pe.id from delegated_tokens dt join permissions pe on pe.project_id = dt.project_id
    where dt.jti = ${jti} ${projectId === undefined ? sql`` : sql`and dt.project_id = ${projectId}`}
      and (dt.permission_ids is null or pe.id = any(dt.permission_ids))
      and (dt.resource_id is null or pe.resource_id = dt.resource_id)
      and pe.id in (select rp.permission_id from role_permissions rp join users u
                      on u.project_id = rp.project_id and u.role_id = rp.role_id
                    where dt.subject_type = 'user' and u.id = dt.subject_id and rp.condition is null
                    union all
                    select cp.permission_id from client_permissions cp
                    where dt.subject_type = 'client' and cp.client_id = dt.subject_id)
      and not exists (select from unnest(dt.actors) a (id) where not exists (
            select from client_delegations d where d.client_id = a.id and d.permission_id = pe.id))`;
}

/**
 * The ids of the permissions `h` holds. `outright`: only those held without a condition, and a user's through
 * their project role only (what a caller covers: a permission it holds only under a condition, or only in an
 * organization, is one it may not give).
 */
function permissionIdsOf(sql: Sql, projectId: string, h: Holder, outright = false) {
  if ("clientId" in h) {
    return sql`select permission_id from client_permissions where project_id = ${projectId} and client_id = ${h.clientId}`;
  }
  const plain = outright ? sql`and rp.condition is null` : sql``;
  if ("userId" in h) {
    const own = sql`select rp.permission_id from role_permissions rp
      join users u on u.project_id = rp.project_id and u.role_id = rp.role_id
      where u.project_id = ${projectId} and u.id = ${h.userId} ${plain}`;
    // What a user holds as the one acted on (`wanted`) counts their organization roles in every organization too:
    // whoever takes over the account gets those. What a user covers as a caller (`outright`) does not: those
    // roles hold only on their organizations' objects, never project-wide.
    return outright ? own : sql`${own}
      union all
      select rp.permission_id from role_permissions rp
      join organization_member_roles mr on mr.role_id = rp.role_id
      where mr.project_id = ${projectId} and mr.user_id = ${h.userId}`;
  }
  if ("roleId" in h) {
    return sql`select rp.permission_id from role_permissions rp
      where rp.project_id = ${projectId} and rp.role_id = ${h.roleId} ${plain}`;
  }
  if ("permissionIds" in h) return sql`select unnest(${h.permissionIds}::text[])`;
  if ("delegatedJti" in h) return delegatedPermissionIds(sql, h.delegatedJti, projectId);
  if ("codes" in h) {
    return sql`select pe.id from permissions pe join resources r on r.id = pe.resource_id
      where pe.project_id = ${projectId} and r.is_default and r.code || ':' || pe.code = any(${h.codes}::text[])`;
  }
  return sql`select pe.id from permissions pe join resources r on r.id = pe.resource_id
    where pe.project_id = ${projectId} and r.is_default`;
}

/**
 * The `resource:permission` codes of the project's permissions that `wanted` holds and `caller` does not,
 * sorted byte-wise; empty when the caller covers them all. One query.
 */
export async function uncoveredCodes(
  sql: Sql,
  projectId: string,
  wanted: Holder,
  caller: Holder,
): Promise<string[]> {
  const rows = await sql<{ code: string }[]>`
    select r.code || ':' || pe.code as code
    from permissions pe join resources r on r.id = pe.resource_id
    where pe.project_id = ${projectId}
      and pe.id in (${permissionIdsOf(sql, projectId, wanted)})
      and pe.id not in (${permissionIdsOf(sql, projectId, caller, true)})
    order by (r.code || ':' || pe.code) collate "C"`;
  return rows.map((r) => r.code);
}

/**
 * The AuthZEN searches on the live model, each one statement: who holds a permission (subjects), on which
 * objects (resources), and which permissions of a resource a subject holds (actions), a page of each with its
 * total. When conditions are involved (a role's on the permission, a live grant's or its role's), the
 * statement answers `{pending}` instead, with what the conditions read from the model: the results can only
 * be known by evaluating them, so domain/authz/search_conditions.ts reads every candidate, in key order, from
 * one statement (`…Candidates`) a chunk at a time (a cursor, in one snapshot: `inOneSnapshot`), and evaluates
 * each. One statement rather than a keyset range per chunk: a range's plan follows the planner's guess of the
 * table's size, and a wrong guess (a top-N sort of everything after the key) made each chunk read the rest.
 */
import type postgres from "postgres";
import type { Sql } from "../connection.ts";

export type SearchPage<T> = { total: number; rows: (T & { k: string })[] };

/** A search's answer: its page, or what its conditions need (`pending`) when only evaluating them tells. */
export type Searched<T, P> = SearchPage<T> | { pending: P };

/** A condition and its role's condition on the permission, as a grant carries them (either may be null). */
export type GrantConditions = { condition: string | null; role_condition: string | null };

/** A candidate: its key, and whether it is after the page's key (`past`: on the page or after it). */
type Candidate = { k: string; past: boolean };

/** Candidates, a chunk of them at a time, in key order. */
export type Chunks<C> = AsyncIterable<C[]>;

/**
 * Runs `fn` in one read-only snapshot (repeatable read): the chunks of a search through conditions, and what
 * they are evaluated with, all see the model at one moment, `now()` included.
 */
export function inOneSnapshot<T>(sql: Sql, fn: (tx: Sql) => Promise<T>): Promise<T> {
  return (sql as postgres.Sql<Record<string, never>>).begin(
    "isolation level repeatable read read only",
    (tx) => fn(tx as unknown as Sql),
  ) as Promise<T>;
}

/** A subject search's question: the subjects of `type` holding `action` of `resource` (on `objectId`'s tree). */
export type SubjectSearch = {
  projectId: string;
  type: string;
  resource: string;
  action: string;
  objectId: string | null;
};

/** What a subject search through conditions reads: the object's stored properties (null: not registered). */
export type SubjectsPending = { object: Record<string, unknown> | null; now: string };

/**
 * The resource's permission (`pe`), and the live grants on the object `objectId` or one of its ancestors whose
 * role holds it (`granted`: the object's ancestors, each probed for grants; a set the subjects are then looked
 * up in), with their conditions.
 */
const subjectSearchBasis = (sql: Sql, q: SubjectSearch) =>
  sql`
    pe as (
      select pe.id, r.id as resource_id from resources r
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${q.action})
      where r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
    ),
    granted as materialized (
      select gr.user_id, gr.client_id, gr.condition, rp.condition as role_condition from pe
      join object_paths op on op.resource_id = pe.resource_id and op.object_id = ${q.objectId}::text
      join object_grants gr on gr.resource_id = op.resource_id and gr.object_id = op.ancestor_id
      join role_permissions rp on rp.role_id = gr.role_id and rp.permission_id = pe.id
      where (gr.expires_at is null or gr.expires_at > now())
    )`;

/**
 * The users (`user`) or clients (`client`) of the project who hold the resource's permission now, active in an
 * active project, after the key `after`, `limit` of them by id, and how many there are in all: project-wide, or
 * through a live grant on the object `objectId` or one of its ancestors. A user is named by its external id when
 * it has one. Pending when a role holds the permission under a condition, or a grant found has one.
 */
export async function searchSubjects(
  sql: Sql,
  q: SubjectSearch & { after: string | null; limit: number },
): Promise<Searched<{ id: string }, SubjectsPending>> {
  const [row] = await sql<
    { total: number; rows: { k: string; id: string }[]; pending: SubjectsPending | null }[]
  >`
    with ${subjectSearchBasis(sql, q)},
    m as (
      select u.id as k, coalesce(u.external_user_id, u.id) as id from users u
      where ${q.type} = 'user' and u.project_id = ${q.projectId} and u.is_active
        and (exists (select 1 from role_permissions rp
                     where rp.role_id = u.role_id and rp.permission_id in (select id from pe))
             or u.id in (select user_id from granted where user_id is not null))
      union all
      select c.id, c.id from clients c
      where ${q.type} = 'client' and c.project_id = ${q.projectId} and c.is_active
        and (exists (select 1 from client_permissions cp
                     where cp.client_id = c.id and cp.permission_id in (select id from pe))
             or c.id in (select client_id from granted where client_id is not null))
    ),
    a as (select exists (select 1 from projects where id = ${q.projectId} and is_active) as active,
      -- By the permission's index: the roles holding it, then the grants found; no subject is read.
      (${q.type} = 'user' and exists (select 1 from role_permissions rp
                                      where rp.permission_id in (select id from pe) and rp.condition is not null))
        or exists (select 1 from granted g
                   where (g.user_id is not null) = (${q.type} = 'user')
                     and (g.condition is not null or g.role_condition is not null)) as conditional)
    select case when a.active and not a.conditional then (select count(*) from m)::int else 0 end as total,
           case when a.active and not a.conditional then coalesce((
             select json_agg(x order by x.k collate "C") from (
               select m.k, m.id from m where ${q.after}::text is null or m.k collate "C" > ${q.after}::text
               order by m.k collate "C" limit ${q.limit}) x), '[]') else '[]' end as rows,
           case when a.active and a.conditional then json_build_object(
             'object', (select ob.properties from pe, objects ob
                        where ob.resource_id = pe.resource_id and ob.id = ${q.objectId}::text),
             'now', now()) end as pending
    from a`;
  return row.pending ? { pending: row.pending } : { total: row.total, rows: row.rows };
}

/** A subject that may hold the permission: outright, or only if its role's condition or a grant's is true. */
export type SubjectCandidate = Candidate & {
  id: string;
  properties: Record<string, unknown>;
  outright: boolean;
  /** Its role's condition on the permission, when its role holds it under one. */
  role_condition: string | null;
  /** Its live grants with a condition (their own or their role's) on the object's tree, if any. */
  grants: GrantConditions[] | null;
};

/**
 * The active users or clients (of an active project) that hold the permission outright or under conditions,
 * by id (byte-wise), `chunk` at a time, each with its stored properties and what it holds the permission by;
 * `past`: after the page's key `after`.
 */
export function subjectCandidates(
  sql: Sql,
  q: SubjectSearch & { after: string | null; chunk: number },
): Chunks<SubjectCandidate> {
  return sql<SubjectCandidate[]>`
    with ${subjectSearchBasis(sql, q)},
    s as (
      select u.id as k, coalesce(u.external_user_id, u.id) as id, u.properties, rp.role_id is not null as held,
        rp.condition as role_condition, true as by_user
      from users u
      left join lateral (
        select rp.role_id, rp.condition from role_permissions rp
        where rp.role_id = u.role_id and rp.permission_id in (select id from pe) limit 1
      ) rp on true
      where ${q.type} = 'user' and u.project_id = ${q.projectId} and u.is_active
        and (rp.role_id is not null or u.id in (select user_id from granted where user_id is not null))
      union all
      select c.id, c.id, c.properties,
        exists (select 1 from client_permissions cp
                where cp.client_id = c.id and cp.permission_id in (select id from pe)), null, false
      from clients c
      where ${q.type} = 'client' and c.project_id = ${q.projectId} and c.is_active
        and (exists (select 1 from client_permissions cp
                     where cp.client_id = c.id and cp.permission_id in (select id from pe))
             or c.id in (select client_id from granted where client_id is not null))
    )
    select s.k, s.id, s.properties,
      (s.held and s.role_condition is null)
        or exists (select 1 from granted g
                   where (case when s.by_user then g.user_id else g.client_id end) = s.k
                     and g.condition is null and g.role_condition is null) as outright,
      s.role_condition,
      (select json_agg(json_build_object('condition', g.condition, 'role_condition', g.role_condition))
       from granted g where (case when s.by_user then g.user_id else g.client_id end) = s.k
         and (g.condition is not null or g.role_condition is not null)) as grants,
      (${q.after}::text is null or s.k collate "C" > ${q.after}::text) as past
    from s where exists (select 1 from projects where id = ${q.projectId} and is_active)
    order by s.k collate "C"`.cursor(q.chunk);
}

/** A page of what one subject (of the project) holds on a resource: after the key `after`, `limit` of it. */
type SubjectPage = {
  projectId: string;
  subjectType: string;
  subjectId: string;
  resource: string;
  after: string | null;
  limit: number;
};

/**
 * The subject of a search as a decision resolves it, at most one row (id, role_id, is_active, properties): a
 * user of the project by id, else by external id; a client of the project by id.
 */
function subjectOf(sql: Sql, q: SubjectPage) {
  return sql`
      (select u.id, u.role_id, u.is_active, u.properties from users u
       where ${q.subjectType} = 'user' and u.project_id = ${q.projectId}
         and (u.id = ${q.subjectId} or u.external_user_id = ${q.subjectId})
       order by u.id = ${q.subjectId} desc limit 1)
      union all
      (select c.id, null, c.is_active, c.properties from clients c
       where ${q.subjectType} = 'client' and c.project_id = ${q.projectId} and c.id = ${q.subjectId})`;
}

/** What a resource search through conditions reads from the model. */
export type ResourcesPending = {
  resource_id: string;
  /** The subject's stored properties. */
  subject: Record<string, unknown>;
  /** Its role's condition on the permission, when its role holds it under one (then every object is a candidate). */
  role_condition: string | null;
  /** Its live grants whose role holds the permission: their objects and conditions. */
  grants: (GrantConditions & { object_id: string })[];
  now: string;
};

/**
 * The objects of the resource the subject (resolved as for a decision) may do the action on now, after the key
 * `after`, `limit` of them by id (byte-wise), and how many in all: every object of the resource when the subject
 * holds the permission project-wide, else the objects under its live grants whose role holds it, each grant's
 * object and descendants (from the closure table, an ordered range per grant: a page reads at most `limit`
 * rows per grant, whatever the subtrees' sizes). The total is read, not counted: the resource's count of
 * objects, or the sizes of the outermost granted objects' subtrees (disjoint). None for an unknown or inactive
 * subject or project. Pending when the subject holds it project-wide only under its role's condition, or not
 * project-wide and a grant has a condition (its own or its role's).
 */
export async function searchResources(
  sql: Sql,
  q: SubjectPage & { action: string },
): Promise<Searched<Record<never, never>, ResourcesPending>> {
  const [row] = await sql<{ total: number; rows: { k: string }[]; pending: ResourcesPending | null }[]>`
    with s as materialized (${subjectOf(sql, q)}),
    pe as materialized (
      select pe.id, r.id as resource_id from s
      join projects p on p.id = ${q.projectId} and p.is_active
      join resources r on r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${q.action})
      where s.is_active
    ),
    held as materialized (
      select rp.condition from s, pe, role_permissions rp where rp.role_id = s.role_id and rp.permission_id = pe.id
    ),
    wide as materialized (
      select exists (select 1 from held where held.condition is null)
        or exists (select 1 from s, pe, client_permissions cp where cp.client_id = s.id and cp.permission_id = pe.id)
        as yes
    ),
    grants as materialized (
      select x.* from s, pe, wide
      cross join lateral (
        select gr.object_id, gr.condition, rp.condition as role_condition from object_grants gr
        join role_permissions rp on rp.role_id = gr.role_id and rp.permission_id = pe.id
        where gr.project_id = ${q.projectId} and gr.subject_id = s.id and gr.resource_id = pe.resource_id
          and (gr.user_id is not null) = (${q.subjectType} = 'user')
          and (gr.expires_at is null or gr.expires_at > now())
      ) x
      where not wide.yes
    ),
    conditional as materialized (
      select not wide.yes and (exists (select 1 from held where held.condition is not null)
        or exists (select 1 from grants where grants.condition is not null or grants.role_condition is not null))
        as yes
      from wide
    ),
    granted as materialized (
      select distinct grants.object_id from grants, conditional where not conditional.yes
    ),
    -- The granted objects under no other granted object: their subtrees are disjoint and cover the rest, so
    -- they are counted and paged without a DISTINCT over every object they reach.
    -- Each granted object's ancestors (at most 32, by the closure table's key) are looked up in one hash of the
    -- granted set: "(x in (…)) is true" keeps the IN a hashed subplan, built once, where a join would let the
    -- planner (which guesses one row for a CTE) rescan the whole set for every ancestor.
    gr as materialized (
      select g.object_id from granted g, pe
      where not exists (
        select 1 from object_paths op
        where op.resource_id = pe.resource_id and op.object_id = g.object_id and op.depth > 0
          and (op.ancestor_id in (select object_id from granted)) is true)
    ),
    page as (
      -- Lateral, so that its plan is an ordered range of the primary key from the key on, whatever the planner
      -- guesses of the resource's size (joined, it read and sorted every object of the resource).
      (select x.k from pe, wide cross join lateral (
         select o.id as k from objects o
         where o.resource_id = pe.resource_id and (${q.after}::text is null or o.id > ${q.after}::text)
         order by o.resource_id, o.id limit ${q.limit}) x
       where wide.yes)
      union
      (select x.k from (
         select d.object_id as k from gr, pe
         cross join lateral (
           select op.object_id from object_paths op
           where op.resource_id = pe.resource_id and op.ancestor_id = gr.object_id
             and (${q.after}::text is null or op.object_id > ${q.after}::text)
           order by op.object_id limit ${q.limit}) d) x
       order by x.k limit ${q.limit})
    )
    select case when (select yes from wide)
                then (select coalesce(sum(c.n), 0) from pe, object_counts c where c.resource_id = pe.resource_id)
                else (select coalesce(sum(o.size), 0) from gr, pe, objects o
                      where o.resource_id = pe.resource_id and o.id = gr.object_id)
           end::int as total,
           coalesce((select json_agg(x order by x.k) from (
             select page.k from page order by page.k limit ${q.limit}) x), '[]') as rows,
           (select json_build_object(
              'resource_id', pe.resource_id,
              'subject', (select s.properties from s),
              'role_condition', (select held.condition from held),
              'grants', (select coalesce(json_agg(grants), '[]') from grants),
              'now', now())
            from pe, conditional where conditional.yes) as pending`;
  return row.pending ? { pending: row.pending } : { total: row.total, rows: row.rows };
}

/** An object that the subject may hold the permission on, with the grants that may give it. */
export type ResourceCandidate = Candidate & {
  properties: Record<string, unknown>;
  /** The granted objects among its ancestors (itself included). */
  under: string[];
};

/**
 * The candidates of a resource search through conditions, by id (byte-wise), `chunk` at a time: every object
 * of the resource (`all`: the subject's role holds the permission under a condition), else the objects under
 * the granted objects `granted`. Each with its stored properties and which of `granted` are among its
 * ancestors (`g`: one pass over the granted objects' rows of the closure table gives both); `past`: after the
 * page's key `after`.
 */
export function resourceCandidates(
  sql: Sql,
  q: { resourceId: string; all: boolean; granted: string[]; after: string | null; chunk: number },
): Chunks<ResourceCandidate> {
  const candidates = q.all
    ? sql`objects o left join g on g.k = o.id where o.resource_id = ${q.resourceId}`
    : sql`g join objects o on o.resource_id = ${q.resourceId} and o.id = g.k`;
  return sql<ResourceCandidate[]>`
    with g as (
      select op.object_id as k, array_agg(op.ancestor_id) as under from object_paths op
      where op.resource_id = ${q.resourceId} and op.ancestor_id = any(${q.granted}::text[])
      group by op.object_id
    )
    select o.id as k, o.properties, coalesce(g.under, '{}') as under,
      (${q.after}::text is null or o.id > ${q.after}::text) as past
    from ${candidates}
    order by o.id`.cursor(q.chunk);
}

/** What an action search through conditions reads: the subject's and the object's stored properties. */
export type ActionsPending = {
  subject: Record<string, unknown>;
  /** Null when the object is not registered. */
  object: Record<string, unknown> | null;
  now: string;
};

/**
 * The permission codes of the resource that the subject (resolved as for a decision) holds now, after the
 * key `after`, `limit` of them by code, and how many in all. None for an unknown or inactive subject. Pending
 * when its role holds one of them under a condition.
 */
export async function searchActions(
  sql: Sql,
  q: SubjectPage & { objectId: string | null },
): Promise<Searched<{ name: string }, ActionsPending>> {
  const [row] = await sql<
    { total: number; rows: { k: string; name: string }[]; pending: ActionsPending | null }[]
  >`
    with s as (${subjectOf(sql, q)}),
    m as (
      select lower(pe.code) as k, pe.code as name, r.id as resource_id,
        exists (select 1 from role_permissions rp
                where rp.role_id = s.role_id and rp.permission_id = pe.id and rp.condition is not null)
          as conditional
      from s
      join projects p on p.id = ${q.projectId} and p.is_active
      join resources r on r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
      join permissions pe on pe.resource_id = r.id
      where s.is_active and (
        exists (select 1 from role_permissions rp where rp.role_id = s.role_id and rp.permission_id = pe.id)
         or exists (select 1 from client_permissions cp where cp.client_id = s.id and cp.permission_id = pe.id))
    ),
    a as materialized (select exists (select 1 from m where m.conditional) as conditional)
    select case when a.conditional then 0 else (select count(*) from m) end::int as total,
           case when a.conditional then '[]' else coalesce((
             select json_agg(x order by x.k collate "C") from (
               select m.k, m.name from m where ${q.after}::text is null or m.k collate "C" > ${q.after}::text
               order by m.k collate "C" limit ${q.limit}) x), '[]') end as rows,
           case when a.conditional then json_build_object(
             'subject', (select s.properties from s),
             'object', (select ob.properties from objects ob
                        where ob.resource_id = (select m.resource_id from m limit 1) and ob.id = ${q.objectId}::text),
             'now', now()) end as pending
    from a`;
  return row.pending ? { pending: row.pending } : { total: row.total, rows: row.rows };
}

/** A permission the subject holds, outright or under conditions. */
export type ActionCandidate = Candidate & {
  name: string;
  /** Held outright: project-wide without condition, or by a grant without one on the object's tree. */
  outright: boolean;
  /** Its role's condition on the permission. */
  role_condition: string | null;
  /** Its live grants with a condition (their own or their role's) on the object `objectId` or an ancestor. */
  grants: GrantConditions[] | null;
};

/**
 * The permissions of the resource the subject holds project-wide, outright or under its role's condition, by
 * code (lower case, byte-wise), `chunk` at a time, each with what it holds it by: for one held only under a
 * condition, also the live grants on the object `objectId` or one of its ancestors whose role holds it.
 * `past`: after the page's key `after`.
 */
export function actionCandidates(
  sql: Sql,
  q: SubjectPage & { objectId: string | null; chunk: number },
): Chunks<ActionCandidate> {
  return sql<ActionCandidate[]>`
    with s as (${subjectOf(sql, q)}),
    m as (
      select lower(pe.code) as k, pe.code as name, pe.id, r.id as resource_id, rp.condition as role_condition,
        (rp.role_id is not null and rp.condition is null) or cp.client_id is not null as outright
      from s
      join projects p on p.id = ${q.projectId} and p.is_active
      join resources r on r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
      join permissions pe on pe.resource_id = r.id
      left join role_permissions rp on rp.role_id = s.role_id and rp.permission_id = pe.id
      left join client_permissions cp on cp.client_id = s.id and cp.permission_id = pe.id
      where s.is_active and (rp.role_id is not null or cp.client_id is not null)
    )
    select m.k, m.name, m.role_condition, m.outright or coalesce(g.plain, false) as outright, g.grants,
      (${q.after}::text is null or m.k collate "C" > ${q.after}::text) as past
    from m cross join s
    left join lateral (
      select bool_or(gr.condition is null and rp.condition is null) as plain,
        json_agg(json_build_object('condition', gr.condition, 'role_condition', rp.condition))
          filter (where gr.condition is not null or rp.condition is not null) as grants
      from object_paths op
      join object_grants gr on gr.resource_id = op.resource_id and gr.object_id = op.ancestor_id
        and gr.subject_id = s.id and (gr.user_id is not null) = (${q.subjectType} = 'user')
        and (gr.expires_at is null or gr.expires_at > now())
      join role_permissions rp on rp.role_id = gr.role_id and rp.permission_id = m.id
      where not m.outright and op.resource_id = m.resource_id and op.object_id = ${q.objectId}::text
    ) g on true
    order by m.k collate "C"`.cursor(q.chunk);
}

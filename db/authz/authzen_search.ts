/**
 * The AuthZEN searches on the live model, each one statement: who holds a permission (subjects), on which
 * objects (resources), and which permissions of a resource a subject holds (actions), a page of each with its
 * total.
 */
import type { Sql } from "../connection.ts";

export type SearchPage<T> = { total: number; rows: (T & { k: string })[] };

/**
 * The users (`user`) or clients (`client`) of the project who hold the resource's permission now, active in an
 * active project, after the key `after`, `limit` of them by id, and how many there are in all: project-wide, or
 * through a live grant on the object `objectId` or one of its ancestors (`granted`: the object's ancestors,
 * each probed for grants; a set the subjects are then looked up in). A user is named by its external id when
 * it has one.
 */
export async function searchSubjects(
  sql: Sql,
  q: {
    projectId: string;
    type: string;
    resource: string;
    action: string;
    objectId: string | null;
    after: string | null;
    limit: number;
  },
): Promise<SearchPage<{ id: string }>> {
  const [row] = await sql<{ total: number; rows: { k: string; id: string }[] }[]>`
    with pe as (
      select pe.id, r.id as resource_id from resources r
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${q.action})
      where r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
    ),
    granted as materialized (
      select gr.user_id, gr.client_id from pe
      join object_paths op on op.resource_id = pe.resource_id and op.object_id = ${q.objectId}::text
      join object_grants gr on gr.resource_id = op.resource_id and gr.object_id = op.ancestor_id
      where (gr.expires_at is null or gr.expires_at > now())
        and exists (select 1 from role_permissions rp where rp.role_id = gr.role_id and rp.permission_id = pe.id)
    ),
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
    a as (select exists (select 1 from projects where id = ${q.projectId} and is_active) as active)
    select case when a.active then (select count(*) from m)::int else 0 end as total,
           case when a.active then coalesce((
             select json_agg(x order by x.k collate "C") from (
               select m.k, m.id from m where ${q.after}::text is null or m.k collate "C" > ${q.after}::text
               order by m.k collate "C" limit ${q.limit}) x), '[]') else '[]' end as rows
    from a`;
  return { total: row.total, rows: row.rows };
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
 * The subject of a search as a decision resolves it, at most one row (id, role_id, is_active): a user of the
 * project by id, else by external id; a client of the project by id.
 */
function subjectOf(sql: Sql, q: SubjectPage) {
  return sql`
      (select u.id, u.role_id, u.is_active from users u
       where ${q.subjectType} = 'user' and u.project_id = ${q.projectId}
         and (u.id = ${q.subjectId} or u.external_user_id = ${q.subjectId})
       order by u.id = ${q.subjectId} desc limit 1)
      union all
      (select c.id, null, c.is_active from clients c
       where ${q.subjectType} = 'client' and c.project_id = ${q.projectId} and c.id = ${q.subjectId})`;
}

/**
 * The objects of the resource the subject (resolved as for a decision) may do the action on now, after the key
 * `after`, `limit` of them by id (byte-wise), and how many in all: every object of the resource when the subject
 * holds the permission project-wide, else the objects under its live grants whose role holds it, each grant's
 * object and descendants (from the closure table, an ordered range per grant: a page reads at most `limit`
 * rows per grant, whatever the subtrees' sizes). The total is read, not counted: the resource's count of
 * objects, or the sizes of the outermost granted objects' subtrees (disjoint). None for an unknown or inactive
 * subject or project.
 */
export async function searchResources(
  sql: Sql,
  q: SubjectPage & { action: string },
): Promise<SearchPage<Record<never, never>>> {
  const [row] = await sql<{ total: number; rows: { k: string }[] }[]>`
    with s as materialized (${subjectOf(sql, q)}),
    pe as materialized (
      select pe.id, r.id as resource_id from s
      join projects p on p.id = ${q.projectId} and p.is_active
      join resources r on r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${q.action})
      where s.is_active
    ),
    wide as materialized (
      select exists (
        select 1 from s, pe where
          exists (select 1 from role_permissions rp where rp.role_id = s.role_id and rp.permission_id = pe.id)
          or exists (select 1 from client_permissions cp where cp.client_id = s.id and cp.permission_id = pe.id)
      ) as yes
    ),
    granted as materialized (
      select distinct x.object_id from s, pe, wide
      cross join lateral (
        select gr.object_id from object_grants gr
        where gr.project_id = ${q.projectId} and gr.subject_id = s.id and gr.resource_id = pe.resource_id
          and (gr.user_id is not null) = (${q.subjectType} = 'user')
          and (gr.expires_at is null or gr.expires_at > now())
          and exists (select 1 from role_permissions rp where rp.role_id = gr.role_id and rp.permission_id = pe.id)
      ) x
      where not wide.yes
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
             select page.k from page order by page.k limit ${q.limit}) x), '[]') as rows`;
  return { total: row.total, rows: row.rows };
}

/**
 * The permission codes of the resource that the subject (resolved as for a decision) holds now, after the
 * key `after`, `limit` of them by code, and how many in all. None for an unknown or inactive subject.
 */
export async function searchActions(
  sql: Sql,
  q: SubjectPage,
): Promise<SearchPage<{ name: string }>> {
  const [row] = await sql<{ total: number; rows: { k: string; name: string }[] }[]>`
    with s as (${subjectOf(sql, q)}),
    m as (
      select lower(pe.code) as k, pe.code as name
      from s
      join projects p on p.id = ${q.projectId} and p.is_active
      join resources r on r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
      join permissions pe on pe.resource_id = r.id
      where s.is_active and (
        exists (select 1 from role_permissions rp where rp.role_id = s.role_id and rp.permission_id = pe.id)
         or exists (select 1 from client_permissions cp where cp.client_id = s.id and cp.permission_id = pe.id))
    )
    select (select count(*) from m)::int as total,
           coalesce((
             select json_agg(x order by x.k collate "C") from (
               select m.k, m.name from m where ${q.after}::text is null or m.k collate "C" > ${q.after}::text
               order by m.k collate "C" limit ${q.limit}) x), '[]') as rows`;
  return { total: row.total, rows: row.rows };
}

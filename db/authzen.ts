/**
 * The AuthZEN decisions and searches on the live model, each one statement: a batch's distinct questions are
 * decided in one snapshot, and a single evaluation's answer is the response body as JSON text.
 */
import type { Sql } from "./connection.ts";
import type { AttachedRead } from "./principals.ts";

/**
 * One question as the statement takes it: subject type and id, resource code, permission code; null where the
 * request's string can never name anything (a NUL byte, an unpaired surrogate).
 */
export type Question = {
  st: string | null;
  si: string | null;
  rt: string | null;
  an: string | null;
};

/**
 * Resolves each item's subject (a user by id, else by external id; a client by id), resource (by code) and
 * permission (by code), and whether the subject holds it now, with the reason. Users and clients of the
 * project only (`$1`); the gate's statement already checked that the project is active, this one checks again
 * so that it also stands alone. Reads the items from `$2` (a JSON array, parsed once into columns), so a batch
 * is one statement; every lookup is a lateral index probe per item (`limit 1`: a hash join over a project's
 * permissions or grants would read them all for a small batch).
 */
const decisions = (items: string) => `
  select i.n, c.allowed, c.code,
    case when c.code in ('role_permission', 'no_permission') then s.role_id end as role_id,
    case when c.code = 'client_permission' then s.id end as client_id
  from ${items}
  cross join (select coalesce((select is_active from projects where id = $1::text), false) as is_active) p
  left join lateral (
    (select u.id, u.is_active as active, u.role_id from users u
     where i.st = 'user' and u.project_id = $1::text and u.id = i.si)
    union all
    (select u.id, u.is_active, u.role_id from users u
     where i.st = 'user' and u.project_id = $1::text and u.external_user_id = i.si)
    union all
    (select c.id, c.is_active, null from clients c
     where i.st = 'client' and c.project_id = $1::text and c.id = i.si)
    limit 1
  ) s on true
  left join lateral (
    select r.id from resources r where r.project_id = $1::text and lower(r.code) = lower(i.rt) limit 1
  ) r on true
  left join lateral (
    select pe.id from permissions pe where pe.resource_id = r.id and lower(pe.code) = lower(i.an) limit 1
  ) pe on true
  left join lateral (
    (select true as ok from role_permissions rp
     where i.st = 'user' and rp.role_id = s.role_id and rp.permission_id = pe.id)
    union all
    (select true from client_permissions cp
     where i.st = 'client' and cp.client_id = s.id and cp.permission_id = pe.id)
    limit 1
  ) g on true
  cross join lateral (
    select (p.is_active and s.active and g.ok) is true as allowed,
      case when not p.is_active then 'project_inactive'
           when s.id is null then 'unknown_subject'
           when not s.active then 'subject_inactive'
           when r.id is null then 'unknown_resource_type'
           when pe.id is null then 'unknown_action'
           when g.ok and i.st = 'user' then 'role_permission'
           when g.ok then 'client_permission'
           else 'no_permission'
      end as code
  ) c`;

/** A batch's items: `$2`, a JSON array (as text), parsed once into columns. */
const BATCH_ITEMS = `rows from (json_to_recordset($2::text::json) as (st text, si text, rt text, an text))
    with ordinality as i (st, si, rt, an, n)`;

/** One question's decision, as compact JSON text: `{"decision":…,"context":{"reason_admin":…}}`. */
const decisionObject = (d: string) =>
  `'{"decision":' || case when ${d}.allowed then 'true' else 'false' end || ',"context":{"reason_admin":'
     || (select json_strip_nulls(row_to_json(x))::text
         from (select ${d}.code, ${d}.role_id, ${d}.client_id) x) || '}}'`;

/**
 * One question, from scalar parameters (`$2` subject type, `$3` subject id, `$4` resource code, `$5` action):
 * no JSON to parse, so the plan PostgreSQL keeps for the prepared statement (or for the gate's, which carries
 * it for a single evaluation) is as cheap as its index probes.
 */
const EVALUATE_ONE = `
  with d as (${
  decisions(`(select $2::text as st, $3::text as si, $4::text as rt, $5::text as an,
    1::bigint as n) i`)
})
  select ${decisionObject("d")} as answer from d`;

/**
 * The decisions of distinct questions (`$2`, a JSON array of them as text), in their order: whether each is
 * allowed, and its decision as compact JSON text. A batch asks the same few questions of many objects, so the
 * domain sends each question once and answers every item from these (domain/authzen.ts); nothing here grows
 * with the items but the questions.
 */
const DECIDE = `
  with d as (${decisions(BATCH_ITEMS)})
  select d.allowed, ${decisionObject("d")} as obj from d order by d.n`;

/** The statement deciding one question in the project, as the read the gate attaches (or runs alone). */
export function evaluationRead(projectId: string, q: Question): AttachedRead {
  return { text: EVALUATE_ONE, params: [projectId, q.st, q.si, q.rt, q.an] };
}

/** Runs an evaluation's statement; its answer as JSON text. */
export async function evaluate(sql: Sql, read: AttachedRead): Promise<string> {
  const [row] = await sql.unsafe<{ answer: string }[]>(read.text, read.params, { prepare: true });
  return row.answer;
}

export type Decided = { allowed: boolean; obj: string };

/** The decisions of `questions` (each complete and asked once), in one statement and so in one snapshot. */
export async function decideAll(sql: Sql, projectId: string, questions: Question[]): Promise<Decided[]> {
  if (questions.length === 0) return [];
  return await sql.unsafe<Decided[]>(DECIDE, [projectId, JSON.stringify(questions)], { prepare: true });
}

export type SearchPage<T> = { total: number; rows: (T & { k: string })[] };

/**
 * The users (`user`) or clients (`client`) of the project who hold the resource's permission now, active in an
 * active project, after the key `after`, `limit` of them by id, and how many there are in all. A user is named
 * by its external id when it has one.
 */
export async function searchSubjects(
  sql: Sql,
  q: {
    projectId: string;
    type: string;
    resource: string;
    action: string;
    after: string | null;
    limit: number;
  },
): Promise<SearchPage<{ id: string }>> {
  const [row] = await sql<{ total: number; rows: { k: string; id: string }[] }[]>`
    with pe as (
      select pe.id from resources r
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${q.action})
      where r.project_id = ${q.projectId} and lower(r.code) = lower(${q.resource})
    ),
    m as (
      select u.id as k, coalesce(u.external_user_id, u.id) as id from users u
      where ${q.type} = 'user' and u.project_id = ${q.projectId} and u.is_active
        and exists (select 1 from role_permissions rp
                    where rp.role_id = u.role_id and rp.permission_id in (select id from pe))
      union all
      select c.id, c.id from clients c
      where ${q.type} = 'client' and c.project_id = ${q.projectId} and c.is_active
        and exists (select 1 from client_permissions cp
                    where cp.client_id = c.id and cp.permission_id in (select id from pe))
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

/**
 * The permission codes of the resource that the subject (resolved as for a decision) holds now, after the
 * key `after`, `limit` of them by code, and how many in all. None for an unknown or inactive subject.
 */
export async function searchActions(
  sql: Sql,
  q: {
    projectId: string;
    subjectType: string;
    subjectId: string;
    resource: string;
    after: string | null;
    limit: number;
  },
): Promise<SearchPage<{ name: string }>> {
  const [row] = await sql<{ total: number; rows: { k: string; name: string }[] }[]>`
    with s as (
      (select u.id, u.role_id, u.is_active from users u
       where ${q.subjectType} = 'user' and u.project_id = ${q.projectId}
         and (u.id = ${q.subjectId} or u.external_user_id = ${q.subjectId})
       order by u.id = ${q.subjectId} desc limit 1)
      union all
      (select c.id, null, c.is_active from clients c
       where ${q.subjectType} = 'client' and c.project_id = ${q.projectId} and c.id = ${q.subjectId})
    ),
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

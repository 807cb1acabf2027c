/**
 * The AuthZEN decisions on the live model, each one statement: a batch's questions are decided in
 * one snapshot, and a single evaluation's answer is the response body as JSON text.
 */
import { batchedRead } from "../batch.ts";
import type { Sql } from "../connection.ts";
import type { AttachedRead } from "./principals.ts";

/**
 * One question as the statement takes it: subject type and id, resource code, permission code, and the
 * object's id (`resource.id`, for grants on objects); null where the request's string can never name anything
 * (a NUL byte, an unpaired surrogate).
 */
export type Question = {
  st: string | null;
  si: string | null;
  rt: string | null;
  an: string | null;
  ri: string | null;
  /**
   * The organization the question is asked in (`context.organization_id`, or the token's `org_id`): the
   * subject's organization roles there count, on the object `ri` unless it is registered in another one.
   */
  org: string | null;
};

/**
 * The grant that lets subject `s` (of type `st`) do permission `pe` of resource `r` on object `ri`: a grant on
 * the object or one of its ancestors (the object's closure table, at most 32, each probed by (resource, object,
 * subject)) whose role holds the permission; a live one without condition first (`plain`: neither the grant nor
 * its role's permission has one), then a live one with a condition, then the nearest, so that `live` false
 * means only an expired one would have allowed it. Lateral, so that the probes start from the ancestors whatever
 * the planner guesses: from the subject's grants on the resource, a subject holding many would read them all.
 * `when`: a condition on the outer row alone, which PostgreSQL checks once before any probe.
 */
const grantOn = (st: string, s: string, r: string, pe: string, ri: string, when = "true") => `
    select x.grant_id, x.object_id, x.live, x.plain
    from object_paths op
    cross join lateral (
      select gr.id as grant_id, gr.object_id, (gr.expires_at is null or gr.expires_at > now()) as live,
        (gr.condition is null and rp.condition is null) as plain
      from object_grants gr
      -- By the primary key, per grant (a join let the planner read every role's grant of the permission).
      cross join lateral (
        select rp.condition from role_permissions rp where rp.role_id = gr.role_id and rp.permission_id = ${pe}
      ) rp
      where gr.resource_id = op.resource_id and gr.object_id = op.ancestor_id and gr.subject_id = ${s}
        and (gr.user_id is not null) = (${st} = 'user')
      order by (gr.expires_at is null or gr.expires_at > now()) desc, (gr.condition is null and rp.condition is null) desc,
        gr.id
      limit 1
    ) x
    where ${when} and op.resource_id = ${r} and op.object_id = ${ri}
    order by x.live desc, x.plain desc, op.depth, x.grant_id
    limit 1`;

/**
 * What a decision through conditions needs, read only when one is (`code` 'conditional'), as JSON text
 * `{"pending": …}`: the role's condition on the permission (null when the role does not hold it), every live
 * grant with a condition on the object or its ancestors (its condition and its role's), the subject's stored
 * properties, the object's when it is registered, and the database's clock (the function `condition_inputs`,
 * migration 0033: a call is one expression of the statement, where its subqueries inline were planned and set up
 * by every decision). domain/authz/decide.ts settles it.
 * `d`: the decision's row (with `st`, `subject_id`, `resource_id`, `permission_id`, `role_id`, `cond`, `live`);
 * `ri`: the object's id.
 */
const pendingObject = (d: string, ri: string, org: boolean) =>
  org
    ? `condition_inputs_org(${d}.role_id, ${d}.permission_id, ${d}.cond, ${d}.subject_properties,
    ${d}.st = 'user', ${d}.subject_id, ${d}.resource_id, ${ri}, ${d}.live, ${d}.organization_id)`
    : `condition_inputs(${d}.role_id, ${d}.permission_id, ${d}.cond, ${d}.subject_properties, ${d}.st = 'user',
    ${d}.subject_id, ${d}.resource_id, ${ri}, ${d}.live)`;

/**
 * An organization role of the subject's in the organization asked about that holds the permission, when the
 * object belongs to that organization: registered with it, or under the nearest ancestor that names one (the
 * object's closure, at most 32 probes). A plain one first. Tried only when the role does not hold the permission
 * outright (conditions on the outer row: checked once).
 */
const ORGANIZATION_ROLE = `
  left join lateral (
    select true as ok, mr.role_id, rp.condition as cond
    from organization_member_roles mr
    join role_permissions rp on rp.role_id = mr.role_id and rp.permission_id = pe.id
    where i.org is not null and i.ri is not null and i.st = 'user' and s.active
      and (g.ok is null or g.cond is not null)
      and mr.organization_id = i.org and mr.user_id = s.id and mr.project_id = $1::text
      and (select ob.organization_id from object_paths op
           join objects ob on ob.resource_id = op.resource_id and ob.id = op.ancestor_id
           where op.resource_id = r.id and op.object_id = i.ri and ob.organization_id is not null
           order by op.depth limit 1) = i.org
    order by rp.condition is null desc, mr.role_id
    limit 1
  ) om on true`;

/**
 * Resolves each item's subject (a user by id, else by external id; a client by id), resource (by code) and
 * permission (by code), and whether the subject holds it now, with the reason. Users and clients of the
 * project only (`$1`); the gate's statement already checked that the project is active, this one checks again
 * so that it also stands alone. Reads the items from `items` (their columns `st`, `si`, `rt`, `an`, `ri`, `n`);
 * every lookup is a lateral index probe per item (`limit 1`: a hash join over a project's permissions or grants
 * would read them all for a small batch). Only when the subject lacks the permission project-wide are the
 * grants on the object and its ancestors tried (`og`, when the item names an object), so a project-wide
 * decision costs what it did. The subject's, resource's and permission's ids are kept for the batch's grants.
 * `org`: the items are asked in organizations (their column `org`), whose roles are tried too (`om`); a statement
 * of its own, so that the questions asked in none cost what they did (its planning included).
 */
const decisions = (items: string, org: boolean) => `
  select i.n, c.allowed, c.code, i.st, i.ri, s.id as subject_id, r.id as resource_id, pe.id as permission_id,
    case ${org ? "when c.code = 'organization_role' then om.role_id" : ""}
         when c.code in ('role_permission', 'no_permission', 'conditional') then s.role_id end as role_id,
    case when c.code = 'client_permission' then s.id end as client_id,
    case when c.code in ('object_grant', 'grant_expired') then og.grant_id end as grant_id,
    case when c.code in ('object_grant', 'grant_expired') then og.object_id end as object_id,
    case when c.code = 'conditional' then g.cond end as cond,
    case when c.code = 'conditional' then og.live is true end as live,
    case when c.code in ('conditional', 'no_permission') then s.properties end as subject_properties${
  org
    ? ", case when c.code = 'organization_role' or (c.code = 'conditional' and om.cond is not null) then i.org " +
      "end as organization_id"
    : ""
}
  from ${items}
  cross join (select coalesce((select is_active from projects where id = $1::text), false) as is_active offset 0) p
  left join lateral (
    (select u.id, u.is_active as active, u.role_id, u.properties from users u
     where i.st = 'user' and u.project_id = $1::text and u.id = i.si)
    union all
    (select u.id, u.is_active, u.role_id, u.properties from users u
     where i.st = 'user' and u.project_id = $1::text and u.external_user_id = i.si)
    union all
    (select c.id, c.is_active, null, c.properties from clients c
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
    (select true as ok, rp.condition as cond from role_permissions rp
     where i.st = 'user' and rp.role_id = s.role_id and rp.permission_id = pe.id)
    union all
    (select true, null from client_permissions cp
     where i.st = 'client' and cp.client_id = s.id and cp.permission_id = pe.id)
    limit 1
  ) g on true
${org ? ORGANIZATION_ROLE : ""}  left join lateral (
    ${
  grantOn(
    "i.st",
    "s.id",
    "r.id",
    "pe.id",
    "i.ri",
    `(g.ok is null or g.cond is not null) ${
      org ? "and (om.ok is null or om.cond is not null)" : ""
    } and pe.id is not null and s.active and i.ri is not null`,
  )
}
  ) og on true
  cross join lateral (
    select (p.is_active and s.active and ((g.ok and g.cond is null) ${
  org ? "or (om.ok and om.cond is null)" : ""
} or (og.live and og.plain))) is true as allowed,
      case when not p.is_active then 'project_inactive'
           when s.id is null then 'unknown_subject'
           when not s.active then 'subject_inactive'
           when r.id is null then 'unknown_resource_type'
           when pe.id is null then 'unknown_action'
           when g.ok and g.cond is null and i.st = 'user' then 'role_permission'
           when g.ok and g.cond is null then 'client_permission'
           ${org ? "when om.ok and om.cond is null then 'organization_role'" : ""}
           when og.live and og.plain then 'object_grant'
           when g.ok ${org ? "or om.ok" : ""} or og.live then 'conditional'
           when og.grant_id is not null then 'grant_expired'
           else 'no_permission'
      end as code
  ) c`;

/** One question's decision, as compact JSON text: `{"decision":…,"context":{"reason_admin":…}}`. */
const decisionObject = (d: string, org: boolean) =>
  `'{"decision":' || case when ${d}.allowed then 'true' else 'false' end
     || ',"context":{"reason_admin":{"code":"' || ${d}.code || '"'
     || coalesce(',"role_id":' || to_json(${d}.role_id)::text, '')${
    org
      ? `
     || coalesce(',"organization_id":' || to_json(${d}.organization_id)::text, '')`
      : ""
  }
     || coalesce(',"client_id":' || to_json(${d}.client_id)::text, '')
     || coalesce(',"grant_id":' || to_json(${d}.grant_id)::text, '')
     || coalesce(',"object_id":' || to_json(${d}.object_id)::text, '') || '}}}'`;

/**
 * One question, from scalar parameters (`$2` subject type, `$3` subject id, `$4` resource code, `$5` action,
 * `$6` object id): no JSON to parse, so the plan PostgreSQL keeps for the prepared statement (or for the
 * gate's, which carries it for a single evaluation) is as cheap as its index probes.
 */
const evaluateOne = (org: boolean) => `
  with d as (${
  decisions(
    `(select $2::text as st, $3::text as si, $4::text as rt, $5::text as an, $6::text as ri, ${
      org ? "$7::text as org, " : ""
    }1::bigint as n) i`,
    org,
  )
})
  select case when d.code = 'conditional' then ${pendingObject("d", "d.ri", org)} else ${
  decisionObject("d", org)
} end
    as answer
  from d`;
/** A question asked in no organization (`$7` is not read), and one asked in one. */
const EVALUATE_ONE = evaluateOne(false);
const EVALUATE_ONE_ORG = evaluateOne(true);

/**
 * A batch in two steps, in one statement (so in one snapshot): the distinct questions without their objects
 * (`$2`, a JSON array of them as text), decided project-wide as one evaluation would be; then the objects asked
 * with a question that the subject does not hold project-wide (`$3`, a JSON array of `{q, ri}`: the question's
 * ordinal and the object's id), each tried for a grant. A batch asks the same few questions of many objects, so
 * the lookups grow with its questions, and only the grants with its objects. One row per question (`ri` null)
 * and one per object that a grant decides, each with its decision as compact JSON text.
 */
const decide = (org: boolean) => `
  with d as materialized (${
  decisions(
    `rows from (json_to_recordset($2::text::json) as (st text, si text, rt text, an text, ri text${
      org ? ", org text" : ""
    })) with ordinality as i (st, si, rt, an, ri, ${org ? "org, " : ""}n)`,
    org,
  )
}),
  o as (
    select o.q, o.ri, x.allowed,
      case when x.code = 'conditional' then ${pendingObject("x", "o.ri", org)} else ${
  decisionObject("x", org)
} end as obj
    from json_to_recordset($3::text::json) as o (q bigint, ri text)
    join d on d.n = o.q and d.code in ('no_permission', 'conditional')
    left join lateral (${
  grantOn("d.st", "d.subject_id", "d.resource_id", "d.permission_id", "o.ri")
}) og on true
    cross join lateral (
      select (og.live and og.plain) is true as allowed, k.code,
        case when k.code = 'conditional' then d.role_id end as role_id, null::text as client_id,
        case when k.code <> 'conditional' then og.grant_id end as grant_id,
        case when k.code <> 'conditional' then og.object_id end as object_id,
        d.st, d.subject_id, d.resource_id, d.permission_id, d.cond, og.live is true as live, d.subject_properties
        ${org ? ", null::text as organization_id" : ""}
      from (select case when og.live and og.plain then 'object_grant'
                        when d.code = 'conditional' or og.live then 'conditional'
                        else 'grant_expired' end as code) k
    ) x
    -- The objects are not even read when no question needs them (a condition PostgreSQL checks once).
    where exists (select from d where d.code in ('no_permission', 'conditional'))
      and (og.grant_id is not null or d.code = 'conditional')
  )
  select d.n as q, null::text as ri, d.allowed,
    -- A question asked in an organization keeps its object (\`d.ri\`); the others have none here.
    case when d.code = 'conditional' then ${pendingObject("d", org ? "d.ri" : "null", org)} else ${
  decisionObject("d", org)
} end as obj
  from d
  union all
  select o.q, o.ri, o.allowed, o.obj from o`;

/** The statement deciding one question in the project, as the read the gate attaches (or runs alone). */
export function evaluationRead(projectId: string, q: Question): AttachedRead {
  return q.org === null
    ? { text: EVALUATE_ONE, params: [projectId, q.st, q.si, q.rt, q.an, q.ri] }
    : { text: EVALUATE_ONE_ORG, params: [projectId, q.st, q.si, q.rt, q.an, q.ri, q.org] };
}

/** Runs an evaluation's statement; its answer as JSON text. */
export async function evaluate(sql: Sql, read: AttachedRead): Promise<string> {
  const [row] = await sql.unsafe<{ answer: string }[]>(read.text, read.params, { prepare: true });
  return row.answer;
}

/**
 * A question of a batch: without its object (the batch's objects are sent apart), unless it is asked in an
 * organization, where the object decides whether the subject's organization roles count.
 */
export type BatchQuestion = Omit<Question, "ri" | "org"> & { ri?: string | null; org?: string | null };

/** A decision of a batch: of question `q` (its ordinal, from 1), or of that question on object `ri`. */
export type Decided = { q: number; ri: string | null; allowed: boolean; obj: string };

/**
 * The decisions of `questions` (each asked once, without its object) and of the `objects` asked with them
 * (`q`: the question's ordinal, from 1), in one statement: every question's, and each object's that a grant
 * decides (an object without one is decided as its question is).
 */
export function decideAll(
  sql: Sql,
  projectId: string,
  questions: BatchQuestion[],
  objects: { q: number; ri: string }[],
): Promise<Decided[]> {
  if (questions.length === 0) return Promise.resolve([]);
  const params: Batch = [projectId, JSON.stringify(questions), JSON.stringify(objects)];
  // A batch that asks anything in an organization takes the statement that reads organization roles.
  const org = questions.some((q) => q.org != null);
  // Only small batches share a statement, so that a large one (or a slow one) never makes the others wait or
  // share its failure: at most BATCH_MAX × SHARED_AT_MOST lookups go in one statement.
  if (questions.length + objects.length > SHARED_AT_MOST) {
    return decideEach(org ? DECIDE_EACH_ORG : DECIDE_EACH, sql, [params]).then(([rows]) => rows);
  }
  return (org ? decideSharedOrg : decideShared)(sql, params).then((rows) => rows ?? []);
}

/** The size (questions and objects) up to which a batch shares its statement with others. */
const SHARED_AT_MOST = 256;

/** A batch as the statement takes it: the project, its questions and its objects as JSON. */
type Batch = [string, string, string];

/**
 * Batches decided in one statement: each batch's parameters are the n-th element of three arrays, and its
 * decisions come back with its ordinal `b`. Each batch is decided in one snapshot, the statement's.
 */
const decideEachText = (org: boolean) => `
  select b.n::int as b, x.q, x.ri, x.allowed, x.obj
  from unnest($1::text[], $2::text[], $3::text[]) with ordinality as b (project_id, questions, objects, n)
  cross join lateral (${
  decide(org).replace(/\$(\d)/g, (_, d) => ["b.project_id", "b.questions", "b.objects"][Number(d) - 1])
}) x`;
const DECIDE_EACH = decideEachText(false);
const DECIDE_EACH_ORG = decideEachText(true);

async function decideEach(text: string, sql: Sql, batches: Batch[]): Promise<Decided[][]> {
  const rows = await sql.unsafe<(Omit<Decided, "q"> & { q: string; b: number })[]>(
    text,
    [batches.map((b) => b[0]), batches.map((b) => b[1]), batches.map((b) => b[2])],
    { prepare: true },
  );
  const decided: Decided[][] = batches.map(() => []);
  for (const r of rows) decided[r.b - 1].push({ q: Number(r.q), ri: r.ri, allowed: r.allowed, obj: r.obj });
  return decided;
}

/**
 * The batches asked for in one turn of the event loop share a statement, and the same batch asked again in it
 * (the same project, questions and objects) is decided once for all who asked (db/batch.ts).
 */
const batchKey = ([project, questions, objects]: Batch) =>
  `${project.length}:${project}${questions.length}:${questions}${objects}`;
const decideShared = batchedRead<Batch, Decided[]>((sql, b) => decideEach(DECIDE_EACH, sql, b), batchKey);
const decideSharedOrg = batchedRead<Batch, Decided[]>(
  (sql, b) => decideEach(DECIDE_EACH_ORG, sql, b),
  batchKey,
);

/**
 * The first of `actors` (a chain, the latest first) that may not carry the permission `action` of `resourceType`
 * for others: not an active client of the project with its delegation on holding it. Null when all may.
 */
export async function actorLacking(
  sql: Sql,
  projectId: string,
  actors: string[],
  resourceType: string,
  action: string,
): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`
    select a.id from unnest(${actors}::text[]) with ordinality as a (id, n)
    where not exists (
      select from clients c
      join resources r on r.project_id = c.project_id and lower(r.code) = lower(${resourceType})
      join permissions pe on pe.resource_id = r.id and lower(pe.code) = lower(${action})
      join client_delegations d on d.client_id = c.id and d.permission_id = pe.id
      where c.project_id = ${projectId} and c.id = a.id and c.is_active and c.delegation)
    order by a.n limit 1`;
  return row?.id ?? null;
}

/**
 * The AuthZEN searches through conditions (docs/authzen.md § Conditions): when a search's statement answers
 * `{pending}` (db/authz/authzen_search.ts), which candidates are results can only be known by evaluating their
 * conditions, as a decision would (domain/authz/decide.ts): a candidate held outright is one, else one whose
 * role's condition is true, or one of whose grants has its own condition and its role's true. A condition that
 * cannot be evaluated excludes the candidate; a search never fails because of one.
 *
 * The candidates are read in key order from one statement, a chunk at a time, in one snapshot, and every one
 * is evaluated: the page is the first `limit` results after its key, and `page.total` counts them all,
 * exactly, so a search through conditions costs one evaluation per candidate, whichever page it asks for.
 * Only one chunk is held at a time (with the page's results). The search's statement is asked again in that snapshot, so
 * that what the conditions read (grants, properties, the clock) and the candidates agree; if it is no longer
 * pending there, its answer is the search's.
 */
import {
  actionCandidates,
  type ActionsPending,
  type Chunks,
  type GrantConditions,
  inOneSnapshot,
  resourceCandidates,
  type ResourcesPending,
  searchActions,
  type SearchPage,
  searchResources,
  searchSubjects,
  subjectCandidates,
  type SubjectSearch,
  type SubjectsPending,
} from "../../db/authz/authzen_search.ts";
import type { Sql } from "../../db/connection.ts";
import {
  allHold,
  type Budget,
  type ConditionInput,
  evaluateCondition,
  firstOversized,
  mapOf,
  MAX_INPUT_BYTES,
} from "./conditions.ts";
import { AppError } from "../shared/errors.ts";

/** How many candidates are fetched at a time. */
const CHUNK = 1000;

/**
 * The time one search may spend evaluating conditions, in milliseconds: a million candidates of an ordinary
 * condition take well under it. Past it the search is refused rather than answered short (a page is never
 * truncated): only a condition iterating a long list the request sent gets there.
 */
export const SEARCH_CONDITION_BUDGET_MS = 5000;

function spent(): never {
  throw new AppError("invalid_params", {
    description:
      `the search's conditions took more than ${SEARCH_CONDITION_BUDGET_MS / 1000} s to evaluate: ` +
      "narrow the request (a condition iterates a list it sends?)",
    details: [{ field: "/context", issue: "the conditions' evaluation time was spent" }],
  });
}

/** What the request says that conditions read: the entities' types, names and sent properties, the context. */
type Asked = {
  subjectType: string;
  resourceType: string;
  action: { name: string; properties?: Record<string, unknown> };
  context?: Record<string, unknown>;
};

/**
 * Whether each of `conditions` (null: none) is true for `input`; an evaluation error is not true. The search is
 * refused once its `budget` is spent.
 */
function allTrue(conditions: (string | null)[], input: ConditionInput, budget: Budget): boolean {
  const outcome = allHold(conditions, (c) => {
    const one = evaluateCondition(c, input, budget);
    if (budget.leftMs <= 0) spent();
    return one;
  });
  return "value" in outcome && outcome.value;
}

/** Whether the role's condition, or one of the grants' (its own and its role's), is true for `input`. */
function anyHolds(
  roleCondition: string | null,
  grants: GrantConditions[],
  input: ConditionInput,
  budget: Budget,
): boolean {
  if (roleCondition !== null && allTrue([roleCondition], input, budget)) return true;
  return grants.some((g) => allTrue([g.role_condition, g.condition], input, budget));
}

const searchBudget = (): Budget => ({ leftMs: SEARCH_CONDITION_BUDGET_MS });

/**
 * 400 `invalid_params` when what the request sends for conditions to read is larger than they read
 * (MAX_INPUT_BYTES): a decision denies with `condition_error`, a search, which would exclude every candidate
 * for it, says so. `pointer`: where each value is in the body.
 */
function refuseOversized(values: [unknown, string][]): void {
  const pointer = firstOversized(values);
  if (pointer === null) return;
  throw new AppError("invalid_params", {
    description: `conditions read at most ${MAX_INPUT_BYTES} bytes of ${pointer}`,
    details: [{ field: pointer, issue: `at most ${MAX_INPUT_BYTES} bytes of JSON when conditions read it` }],
  });
}

/**
 * The page (`limit` results after the page's key, one more if there is more) and the total of a search
 * through conditions: every candidate of `chunks` (in key order, from the first) that `allowed` keeps.
 */
async function evaluatedPage<C extends { k: string; past: boolean }>(
  chunks: Chunks<C>,
  allowed: (c: C) => boolean,
  limit: number,
): Promise<SearchPage<C>> {
  const rows: C[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    for (const c of chunk) {
      if (!allowed(c)) continue;
      total++;
      if (c.past && rows.length < limit) rows.push(c);
    }
  }
  return { total, rows };
}

/**
 * The subjects holding the permission (`q`, a page of them from `after`), when some hold it only through
 * conditions. A candidate's `subject.id` in its conditions is the id the search answers with (a user's
 * external id when it has one, else its id): the id a decision asked of that result would name it by.
 * `resource.properties`: the registered object's stored ones, else the request's.
 */
export async function subjectsThroughConditions(
  sql: Sql,
  q: SubjectSearch & { after: string | null; limit: number },
  asked: Asked & { resourceId: string; resourceProperties?: Record<string, unknown> },
): Promise<SearchPage<{ id: string }>> {
  return await inOneSnapshot(sql, async (tx) => {
    const found = await searchSubjects(tx, q);
    if (!("pending" in found)) return found;
    const p: SubjectsPending = found.pending;
    refuseOversized([
      [asked.resourceId, "/resource/id"],
      [asked.context, "/context"],
      [asked.action.properties, "/action/properties"],
      [p.object === null ? asked.resourceProperties : undefined, "/resource/properties"],
    ]);
    const resource = { id: asked.resourceId, properties: p.object ?? mapOf(asked.resourceProperties) };
    const base = inputOf(asked, { id: "", properties: {} }, resource, p.now);
    const budget = searchBudget();
    return await evaluatedPage(
      subjectCandidates(tx, { ...q, chunk: CHUNK }),
      (c) =>
        c.outright ||
        anyHolds(c.role_condition, c.grants ?? [], {
          ...base,
          subject: { type: asked.subjectType, id: c.id, properties: mapOf(c.properties) },
        }, budget),
      q.limit,
    );
  });
}

/**
 * The objects the subject may do the action on (`q`, a page of them from `after`), when it holds the
 * permission only through conditions: each object evaluated with its stored properties, the subject named as
 * the request names it, with its stored properties.
 */
export async function resourcesThroughConditions(
  sql: Sql,
  q: Parameters<typeof searchResources>[1],
  asked: Asked,
): Promise<SearchPage<Record<never, never>>> {
  return await inOneSnapshot(sql, async (tx) => {
    const found = await searchResources(tx, q);
    if (!("pending" in found)) return found;
    const p: ResourcesPending = found.pending;
    refuseOversized([[asked.context, "/context"], [asked.action.properties, "/action/properties"]]);
    // A grant's conditions by its object; the objects of grants without any reach theirs outright.
    const conditional = new Map<string, GrantConditions[]>();
    const outright = new Set<string>();
    for (const g of p.grants) {
      if (g.condition === null && g.role_condition === null) outright.add(g.object_id);
      else conditional.set(g.object_id, [...conditional.get(g.object_id) ?? [], g]);
    }
    const subject = { id: q.subjectId, properties: mapOf(p.subject) };
    const base = inputOf(asked, subject, { id: "", properties: {} }, p.now);
    const budget = searchBudget();
    const candidates = resourceCandidates(tx, {
      resourceId: p.resource_id,
      all: p.role_condition !== null,
      granted: [...new Set(p.grants.map((g) => g.object_id))],
      after: q.after,
      chunk: CHUNK,
    });
    return await evaluatedPage(
      candidates,
      (c) =>
        c.under.some((o) => outright.has(o)) ||
        anyHolds(p.role_condition, c.under.flatMap((o) => conditional.get(o) ?? []), {
          ...base,
          resource: { type: asked.resourceType, id: c.k, properties: mapOf(c.properties) },
        }, budget),
      q.limit,
    );
  });
}

/**
 * The permissions the subject holds (`q`, a page of them from `after`), when its role holds some under a
 * condition: one of those is listed when its condition, or a grant's on the object `resource.id` (or an
 * ancestor), is true for the request's resource (a registered object's stored properties, else the sent ones).
 */
export async function actionsThroughConditions(
  sql: Sql,
  q: Parameters<typeof searchActions>[1],
  asked: Omit<Asked, "action"> & { resourceId: string; resourceProperties?: Record<string, unknown> },
): Promise<SearchPage<{ name: string }>> {
  return await inOneSnapshot(sql, async (tx) => {
    const found = await searchActions(tx, q);
    if (!("pending" in found)) return found;
    const p: ActionsPending = found.pending;
    refuseOversized([
      [asked.resourceId, "/resource/id"],
      [asked.context, "/context"],
      [p.object === null ? asked.resourceProperties : undefined, "/resource/properties"],
    ]);
    const base = inputOf(
      { ...asked, action: { name: "" } },
      { id: q.subjectId, properties: mapOf(p.subject) },
      { id: asked.resourceId, properties: p.object ?? mapOf(asked.resourceProperties) },
      p.now,
    );
    const budget = searchBudget();
    return await evaluatedPage(
      actionCandidates(tx, { ...q, chunk: CHUNK }),
      (c) =>
        c.outright ||
        anyHolds(
          c.role_condition,
          c.grants ?? [],
          { ...base, action: { name: c.name, properties: {} } },
          budget,
        ),
      q.limit,
    );
  });
}

type Named = { id: string; properties: Record<string, unknown> };

/** A condition's input for a search; the entity the search iterates over is filled in per candidate. */
function inputOf(asked: Asked, subject: Named, resource: Named, now: string): ConditionInput {
  return {
    subject: { type: asked.subjectType, ...subject },
    resource: { type: asked.resourceType, ...resource },
    action: { name: asked.action.name, properties: mapOf(asked.action.properties) },
    context: mapOf(asked.context),
    now: new Date(now),
  };
}

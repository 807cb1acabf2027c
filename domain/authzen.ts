/**
 * The AuthZEN Authorization API 1.0 as a Policy Decision Point on the live model (docs/authzen.md): a subject
 * (a user or a client of the token's project) may do `action.name` on `resource.type` when it holds that
 * permission of that resource now. Every well-formed question is answered, with its reason; a batch is one
 * statement, so one snapshot; searches page with a token bound to their query.
 */
import { retryRead, type Sql } from "../db/connection.ts";
import {
  decideAll,
  type Decided,
  evaluate,
  evaluationRead,
  type Question,
  searchActions,
  searchResources,
  searchSubjects,
} from "../db/authzen.ts";
import {
  type Action,
  type ActionSearchRequest,
  type ActionSearchResponse,
  type Decision,
  DEFAULT_PAGE_LIMIT,
  type EntitySearchResponse,
  type EvaluationItem,
  EvaluationRequest,
  EvaluationsRequest,
  type EvaluationsResponse,
  type PageResponse,
  type Resource,
  type ResourceSearchRequest,
  type Semantic,
  type Subject,
  type SubjectSearchRequest,
} from "../openapi/authzen.ts";
import { decodeBase64Strict, encodeBase64Url } from "./base64.ts";
import { AppError } from "./errors.ts";
import { type Attached, type AttachedRead, attachedRecord } from "./gate.ts";
import type { JsonText } from "./pages.ts";

/**
 * A string as the statement may carry it, or null when it can never name anything: PostgreSQL refuses a NUL
 * byte, and an unpaired surrogate cannot be stored either (every id and code of the model is well-formed text).
 */
function usable(s: string): string | null {
  return s.includes("\0") || !s.isWellFormed() ? null : s;
}

function question(subject: Subject, action: Action, resource: Resource): Question {
  return {
    st: usable(subject.type),
    si: usable(subject.id),
    rt: usable(resource.type),
    an: usable(action.name),
    ri: usable(resource.id),
  };
}

/**
 * An item of a batch: its question, or the JSON pointers of the entities it lacks (it is then answered
 * `invalid_request`).
 */
type Item = Question | { missing: string[] };

/** What a batch asks: its items in order, how to cut the answers, and whether it is one evaluation. */
type Plan = { items: Item[]; semantic: Semantic; single: boolean };

type Entities = { subject?: Partial<Subject>; action?: Partial<Action>; resource?: Partial<Resource> };

/** The pointers of what `e` lacks to be complete (an entity, or a field of one). */
function lacking(e: Entities, at: (key: string) => string): string[] {
  const out: string[] = [];
  if (e.subject === undefined) out.push(at("subject"));
  else {
    if (e.subject.type === undefined) out.push(`${at("subject")}/type`);
    if (e.subject.id === undefined) out.push(`${at("subject")}/id`);
  }
  if (e.action === undefined) out.push(at("action"));
  else if (e.action.name === undefined) out.push(`${at("action")}/name`);
  if (e.resource === undefined) out.push(at("resource"));
  else {
    if (e.resource.type === undefined) out.push(`${at("resource")}/type`);
    if (e.resource.id === undefined) out.push(`${at("resource")}/id`);
  }
  return out;
}

/**
 * The evaluations of a batch request, each entity it omits taken whole from the top level (AuthZEN §
 * "Default values"). Without evaluations, or with none, the request is one evaluation: its top-level entities
 * must then be complete (400 `invalid_params` otherwise). An item still incomplete is answered
 * `invalid_request` (the certification scenario's `execute_all` error handling), whatever the semantic.
 */
export function planEvaluations(req: EvaluationsRequest): Plan {
  const semantic = req.options?.evaluations_semantic ?? "execute_all";
  const items: EvaluationItem[] = req.evaluations ?? [];
  if (items.length === 0) {
    const missing = lacking(req, (k) => `/${k}`);
    if (missing.length > 0) {
      throw new AppError("invalid_params", {
        description: "without evaluations, subject, action and resource are required",
        details: missing.map((field) => ({ field, issue: "required" })),
      });
    }
    return {
      items: [question(req.subject as Subject, req.action as Action, req.resource as Resource)],
      semantic,
      single: true,
    };
  }
  const planned = items.map((item, i): Item => {
    const merged: Entities = {
      subject: item.subject ?? req.subject,
      action: item.action ?? req.action,
      resource: item.resource ?? req.resource,
    };
    const missing = lacking(merged, (k) => `/evaluations/${i}/${k}`);
    if (missing.length > 0) return { missing };
    return question(merged.subject as Subject, merged.action as Action, merged.resource as Resource);
  });
  return { items: planned, semantic, single: false };
}

/** The read of one evaluation: the gate carries it, and `evaluateOne` recognises it by its text and params. */
function oneRead(projectId: string, req: EvaluationRequest): AttachedRead {
  return evaluationRead(projectId, question(req.subject, req.action, req.resource));
}

/** The read the gate attaches for a single evaluation's body as sent; null when it does not validate. */
export function evaluationReadOf(projectId: string, body: unknown): AttachedRead | null {
  const parsed = EvaluationRequest.safeParse(body);
  return parsed.success ? oneRead(projectId, parsed.data) : null;
}

/** `{ "decision": … }` for one question; the gate's answer when it decided this very question. */
export async function evaluateOne(
  sql: Sql,
  projectId: string,
  req: EvaluationRequest,
  attached?: Attached,
): Promise<JsonText<Decision>> {
  const read = oneRead(projectId, req);
  const text = attachedRecord<string>(attached, read) ?? await retryRead(() => evaluate(sql, read));
  return text as JsonText<Decision>;
}

/**
 * `{ "evaluations": […] }` (or one decision, for a request without evaluations): a statement of its own after
 * the gate's, never carried by it (routes/authzen.ts says why). Each distinct question is decided once, all of
 * them in one statement (so in one snapshot), and every item answered from its question's decision, in order,
 * cut after the first deny (`deny_on_first_deny`) or the first permit (`permit_on_first_permit`).
 */
export async function evaluateMany(
  sql: Sql,
  projectId: string,
  req: EvaluationsRequest,
): Promise<JsonText<EvaluationsResponse | Decision>> {
  const plan = planEvaluations(req);
  if (plan.single) {
    const read = evaluationRead(projectId, plan.items[0] as Question);
    return await retryRead(() => evaluate(sql, read)) as JsonText<Decision>;
  }
  // Each distinct question (without its object) once, numbered from 1; each distinct object once per question.
  const questions: Omit<Question, "ri">[] = [];
  const numbers = new Map<string, number>();
  const objects: { q: number; ri: string }[] = [];
  const asked = new Set<string>();
  const slots = plan.items.map((item) => {
    if ("missing" in item) return -1;
    const key = JSON.stringify([item.st, item.si, item.rt, item.an]);
    let q = numbers.get(key);
    if (q === undefined) {
      q = questions.push({ st: item.st, si: item.si, rt: item.rt, an: item.an });
      numbers.set(key, q);
    }
    if (item.ri !== null && !asked.has(`${q} ${item.ri}`)) {
      asked.add(`${q} ${item.ri}`);
      objects.push({ q, ri: item.ri });
    }
    return q;
  });
  const byQuestion = new Map<number, Decided>();
  const byObject = new Map<string, Decided>();
  for (const d of await retryRead(() => decideAll(sql, projectId, questions, objects))) {
    if (d.ri === null) byQuestion.set(d.q, d);
    else byObject.set(`${d.q} ${d.ri}`, d);
  }
  const answers: string[] = [];
  for (let i = 0; i < slots.length; i++) {
    const item = plan.items[i];
    const d = "missing" in item
      ? incomplete(item.missing)
      : byObject.get(`${slots[i]} ${item.ri}`) ?? byQuestion.get(slots[i])!;
    answers.push(d.obj);
    if (
      plan.semantic === "deny_on_first_deny"
        ? !d.allowed
        : plan.semantic === "permit_on_first_permit" && d.allowed
    ) {
      break;
    }
  }
  return `{"evaluations":[${answers.join(",")}]}` as JsonText<EvaluationsResponse>;
}

/** The answer to an item still incomplete after the defaults: denied, naming what it lacks. */
function incomplete(missing: string[]): { allowed: boolean; obj: string } {
  const reason = JSON.stringify({ code: "invalid_request", missing });
  return { allowed: false, obj: `{"decision":false,"context":{"reason_admin":${reason}}}` };
}

/** JSON with object keys sorted, so that the same query always hashes the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder("utf-8", { fatal: true });

/** 128 bits of the SHA-256 of the query (its endpoint, project, entities, context and limit). */
async function queryHash(query: unknown): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", ENCODER.encode(canonical(query)));
  return encodeBase64Url(new Uint8Array(digest).slice(0, 16));
}

function badToken(issue: string): AppError {
  return new AppError("invalid_params", {
    description: "the page token is not one this query was given",
    details: [{ field: "/page/token", issue }],
  });
}

/** Where the page starts: after the key the token carries, when the token is this very query's. */
async function pageStart(
  page: { token?: string; limit?: number } | undefined,
  query: unknown,
): Promise<{ after: string | null; limit: number; hash: string }> {
  const limit = page?.limit ?? DEFAULT_PAGE_LIMIT;
  const hash = await queryHash({ query, limit });
  if (page?.token === undefined || page.token === "") return { after: null, limit, hash };
  let parsed: unknown;
  try {
    const bytes = decodeBase64Strict(page.token);
    if (bytes === null) throw new Error("not base64");
    parsed = JSON.parse(DECODER.decode(bytes));
  } catch {
    throw badToken("not a page token of this service");
  }
  const t = parsed as { k?: unknown; q?: unknown };
  if (
    typeof t !== "object" || t === null || typeof t.k !== "string" || typeof t.q !== "string" || !usable(t.k)
  ) {
    throw badToken("not a page token of this service");
  }
  if (t.q !== hash) throw badToken("the query or its limit differs from the one the token was issued for");
  return { after: t.k, limit, hash };
}

/** The `page` of an answer: a token for the rest when `count` results leave more after key `last`. */
function pageOf(
  total: number,
  count: number,
  last: string | undefined,
  start: { hash: string },
  more: boolean,
) {
  const next = more && last !== undefined
    ? encodeBase64Url(ENCODER.encode(JSON.stringify({ k: last, q: start.hash })))
    : "";
  return { next_token: next, count, total } satisfies PageResponse;
}

/**
 * Who may do the action on the resource now: users (named by their external id when they have one) or
 * clients, as `subject.type` asks. An unknown type, resource or action: no results.
 */
export async function searchSubjectsOf(
  sql: Sql,
  projectId: string,
  req: SubjectSearchRequest,
): Promise<EntitySearchResponse> {
  const { subject, action, resource, context } = req;
  const start = await pageStart(req.page, { at: "subject", projectId, subject, action, resource, context });
  const [type, code, name] = [usable(subject.type), usable(resource.type), usable(action.name)];
  if (type === null || code === null || name === null || (type !== "user" && type !== "client")) {
    return { page: pageOf(0, 0, undefined, start, false), results: [] };
  }
  const found = await retryRead(() =>
    searchSubjects(sql, {
      projectId,
      type,
      resource: code,
      action: name,
      objectId: usable(resource.id),
      after: start.after,
      limit: start.limit + 1,
    })
  );
  const rows = found.rows.slice(0, start.limit);
  return {
    page: pageOf(found.total, rows.length, rows.at(-1)?.k, start, found.rows.length > start.limit),
    results: rows.map((r) => ({ type, id: r.id })),
  };
}

/** The permission codes the subject holds on the resource type now. Unknown subject or type: no results. */
export async function searchActionsOf(
  sql: Sql,
  projectId: string,
  req: ActionSearchRequest,
): Promise<ActionSearchResponse> {
  const { subject, resource, context } = req;
  const start = await pageStart(req.page, { at: "action", projectId, subject, resource, context });
  const [type, id, code] = [usable(subject.type), usable(subject.id), usable(resource.type)];
  if (type === null || id === null || code === null) {
    return { page: pageOf(0, 0, undefined, start, false), results: [] };
  }
  const found = await retryRead(() =>
    searchActions(sql, {
      projectId,
      subjectType: type,
      subjectId: id,
      resource: code,
      after: start.after,
      limit: start.limit + 1,
    })
  );
  const rows = found.rows.slice(0, start.limit);
  return {
    page: pageOf(found.total, rows.length, rows.at(-1)?.k, start, found.rows.length > start.limit),
    results: rows.map((r) => ({ name: r.name })),
  };
}

/**
 * The objects of the resource type the subject may do the action on: every registered object when it holds
 * the permission project-wide, else those under its live grants (with their descendants), by id. An unknown
 * subject, type or action, or an inactive subject: no results.
 */
export async function searchResourcesOf(
  sql: Sql,
  projectId: string,
  req: ResourceSearchRequest,
): Promise<EntitySearchResponse> {
  const { subject, action, resource, context } = req;
  const start = await pageStart(req.page, { at: "resource", projectId, subject, action, resource, context });
  const [type, id, code, name] = [
    usable(subject.type),
    usable(subject.id),
    usable(resource.type),
    usable(action.name),
  ];
  if (type === null || id === null || code === null || name === null) {
    return { page: pageOf(0, 0, undefined, start, false), results: [] };
  }
  const found = await retryRead(() =>
    searchResources(sql, {
      projectId,
      subjectType: type,
      subjectId: id,
      resource: code,
      action: name,
      after: start.after,
      limit: start.limit + 1,
    })
  );
  const rows = found.rows.slice(0, start.limit);
  return {
    page: pageOf(found.total, rows.length, rows.at(-1)?.k, start, found.rows.length > start.limit),
    results: rows.map((r) => ({ type: resource.type, id: r.k })),
  };
}

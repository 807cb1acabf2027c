/**
 * The AuthZEN Authorization API 1.0 as a Policy Decision Point on the live model (docs/authzen.md): a subject
 * (a user or a client of the token's project) may do `action.name` on `resource.type` when it holds that
 * permission of that resource now. Every well-formed question is answered, with its reason; a batch is one
 * statement, so one snapshot. The searches are in domain/authz/authzen_search.ts.
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import {
  actorLacking,
  type BatchQuestion,
  decideAll,
  type Decided,
  evaluate,
  evaluationRead,
  type Question,
} from "../../db/authz/authzen.ts";
import type {
  Action,
  Decision,
  EvaluationItem,
  EvaluationRequest,
  EvaluationsRequest,
  EvaluationsResponse,
  Resource,
  Semantic,
  Subject,
} from "../../openapi/authzen.ts";
import { AppError } from "../shared/errors.ts";
import { type Attached, type AttachedRead, attachedRecord } from "./gate.ts";
import type { JsonText } from "./lists.ts";
import { isPending, settle } from "./decide.ts";
import { newBudget } from "./conditions.ts";

/**
 * A string as the statement may carry it, or null when it can never name anything: PostgreSQL refuses a NUL
 * byte, and an unpaired surrogate cannot be stored either (every id and code of the model is well-formed text).
 */
export function usable(s: string): string | null {
  return s.includes("\0") || !s.isWellFormed() ? null : s;
}

function question(
  subject: Subject,
  action: Action,
  resource: Resource,
  org: string | null,
): Question {
  return {
    st: usable(subject.type),
    si: usable(subject.id),
    rt: usable(resource.type),
    an: usable(action.name),
    ri: usable(resource.id),
    org,
  };
}

/**
 * The organization a question is asked in: `context.organization_id`, else the token's (`org_id`, for a user
 * token of an organization). A `context.organization_id` that is not a string names none, so that only
 * project-wide permissions and grants count (an organization's roles only ever add to them).
 */
export function organizationAsked(
  context: Record<string, unknown> | undefined,
  tokenOrg: string | null,
): string | null {
  const o = context?.organization_id;
  if (o === undefined) return tokenOrg;
  return typeof o === "string" ? usable(o) : null;
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
export function planEvaluations(req: EvaluationsRequest, tokenOrg: string | null = null): Plan {
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
      items: [
        question(
          req.subject as Subject,
          req.action as Action,
          req.resource as Resource,
          organizationAsked(req.context, tokenOrg),
        ),
      ],
      semantic,
      single: true,
    };
  }
  // Items mostly share the top level's entities: each entity's strings are checked once per run of items
  // that share it.
  let subject: Partial<Subject> | undefined, action: Partial<Action> | undefined;
  let resource: Partial<Resource> | undefined;
  let st: string | null = null, si: string | null = null, an: string | null = null;
  let rt: string | null = null, ri: string | null = null;
  let context: Record<string, unknown> | undefined, org: string | null = tokenOrg;
  const planned = new Array<Item>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const s = item.subject ?? req.subject, a = item.action ?? req.action, r = item.resource ?? req.resource;
    if (
      s?.type === undefined || s.id === undefined || a?.name === undefined || r?.type === undefined ||
      r.id === undefined
    ) {
      planned[i] = {
        missing: lacking({ subject: s, action: a, resource: r }, (k) => `/evaluations/${i}/${k}`),
      };
      continue;
    }
    if (s !== subject) [subject, st, si] = [s, usable(s.type), usable(s.id)];
    if (a !== action) [action, an] = [a, usable(a.name)];
    if (r !== resource) [resource, rt, ri] = [r, usable(r.type), usable(r.id)];
    const x = item.context ?? req.context;
    if (x !== context) [context, org] = [x, organizationAsked(x, tokenOrg)];
    planned[i] = { st, si, rt, an, ri, org };
  }
  return { items: planned, semantic, single: false };
}

/** The read of one evaluation: the gate carries it, and `evaluateOne` recognises it by its text and params. */
function oneRead(projectId: string, req: EvaluationRequest, tokenOrg: string | null): AttachedRead {
  return evaluationRead(
    projectId,
    question(req.subject, req.action, req.resource, organizationAsked(req.context, tokenOrg)),
  );
}

/** A string field of an object sent as JSON, or undefined. */
function field(o: unknown, key: string): unknown {
  return o !== null && typeof o === "object" && !Array.isArray(o)
    ? (o as Record<string, unknown>)[key]
    : undefined;
}

/**
 * The read the gate attaches for a single evaluation's body as sent: read off the five strings it asks about,
 * without a schema (the route's validator parses the body after the gate, and the handler uses the record only
 * when the validated request makes this very read). Null when one of them is not a string.
 */
export function evaluationReadOf(
  token: { projectId: string; organizationId: string | null },
  body: unknown,
): AttachedRead | null {
  const subject = field(body, "subject"), action = field(body, "action"), resource = field(body, "resource");
  const [st, si, an, rt, ri] = [
    field(subject, "type"),
    field(subject, "id"),
    field(action, "name"),
    field(resource, "type"),
    field(resource, "id"),
  ];
  if (
    typeof st !== "string" || typeof si !== "string" || typeof an !== "string" || typeof rt !== "string" ||
    typeof ri !== "string"
  ) {
    return null;
  }
  const context = field(body, "context");
  const org = organizationAsked(
    context !== null && typeof context === "object" && !Array.isArray(context)
      ? context as Record<string, unknown>
      : undefined,
    token.organizationId,
  );
  return evaluationRead(
    token.projectId,
    question({ type: st, id: si }, { name: an }, { type: rt, id: ri }, org),
  );
}

/** A decision without its reason, for a client that wants none (`decision_reasons` false). */
const bare = (allowed: boolean) =>
  (allowed ? '{"decision":true}' : '{"decision":false}') as JsonText<Decision>;

/**
 * `{ "decision": … }` for one question; the gate's answer when it decided this very question. `reasons` false:
 * without `context.reason_admin`.
 */
export async function evaluateOne(
  sql: Sql,
  projectId: string,
  req: EvaluationRequest,
  attached?: Attached,
  reasons = true,
  tokenOrg: string | null = null,
): Promise<JsonText<Decision>> {
  const text = await decideOne(sql, projectId, req, attached, tokenOrg);
  return reasons ? text : bare(text.startsWith('{"decision":true'));
}

async function decideOne(
  sql: Sql,
  projectId: string,
  req: EvaluationRequest,
  attached: Attached | undefined,
  tokenOrg: string | null,
): Promise<JsonText<Decision>> {
  const read = oneRead(projectId, req, tokenOrg);
  let text = attachedRecord<string>(attached, read) ?? await retryRead(() => evaluate(sql, read));
  if (isPending(text)) text = settle(text, req).obj;
  const actors = actorsAsked(req.context);
  if (actors === undefined || !text.startsWith('{"decision":true')) return text as JsonText<Decision>;
  return await actorDecision(sql, projectId, actors, req.resource.type, req.action.name) ??
    text as JsonText<Decision>;
}

/**
 * The actors `context.act` names (RFC 8693 §4.1, the latest first): undefined without `act`, null when it is
 * malformed (not `{"sub": string}` nested at most 5 deep).
 */
function actorsAsked(context: Record<string, unknown> | undefined): string[] | null | undefined {
  if (context?.act === undefined) return undefined;
  const out: string[] = [];
  let a: unknown = context.act;
  while (a !== undefined) {
    if (out.length >= 5 || typeof a !== "object" || a === null || Array.isArray(a)) return null;
    const { sub, act } = a as Record<string, unknown>;
    if (typeof sub !== "string" || usable(sub) === null) return null;
    out.push(sub);
    a = act;
  }
  return out;
}

/**
 * A subject's allowed decision checked against its actors: denied with `actor_not_delegated` (the first actor
 * that may not carry the permission) or `invalid_request` (a malformed `act`); null when every actor may.
 */
async function actorDecision(
  sql: Sql,
  projectId: string,
  actors: string[] | null,
  resourceType: string,
  action: string,
): Promise<JsonText<Decision> | null> {
  if (actors === null) return incomplete(["/context/act"]).obj as JsonText<Decision>;
  const rt = usable(resourceType), an = usable(action);
  const lacking = rt === null || an === null
    ? actors[0]
    : await retryRead(() => actorLacking(sql, projectId, actors, rt, an));
  if (lacking === null) return null;
  const reason = JSON.stringify({ code: "actor_not_delegated", client_id: lacking });
  return `{"decision":false,"context":{"reason_admin":${reason}}}` as JsonText<Decision>;
}

/** An answer as JSON text, and how many of its decisions allow and deny (for the metrics). */
export type Answer<T> = { text: JsonText<T>; allowed: number; denied: number };

/** One decision's answer, from its text (db/authz/authzen.ts writes `{"decision":true` or `false` first). */
export function decisionAnswer(text: string): Answer<Decision> {
  const allowed = text.startsWith('{"decision":true') ? 1 : 0;
  return { text: text as JsonText<Decision>, allowed, denied: 1 - allowed };
}

/** How many questions a batch looks through one by one before it looks them up by key. */
const SCANNED = 8;

/**
 * `{ "evaluations": […] }` (or one decision, for a request without evaluations): a statement of its own after
 * the gate's, shared with the other batches asked in the same turn (db/authz/authzen.ts). Each distinct question is
 * decided once, all of them in one statement (so in one snapshot), and every item answered from its question's
 * decision (or its object's), in order, cut after the first deny (`deny_on_first_deny`) or the first permit
 * (`permit_on_first_permit`).
 */
export async function evaluateMany(
  sql: Sql,
  projectId: string,
  req: EvaluationsRequest,
  reasons = true,
  tokenOrg: string | null = null,
): Promise<Answer<EvaluationsResponse | Decision>> {
  const plan = planEvaluations(req, tokenOrg);
  // Without items, the request is one evaluation (its top-level entities complete: planEvaluations checked).
  if (plan.single) {
    return decisionAnswer(
      await evaluateOne(sql, projectId, req as EvaluationRequest, undefined, reasons, tokenOrg),
    );
  }
  const { questions, objects, slots } = numbered(plan.items as Question[]);
  const byQuestion: Decided[] = [];
  const byObject = new Map<number, Map<string, Decided>>();
  for (const d of await retryRead(() => decideAll(sql, projectId, questions, objects))) {
    if (d.ri === null) byQuestion[d.q] = d;
    else {
      let decided = byObject.get(d.q);
      if (!decided) byObject.set(d.q, decided = new Map());
      decided.set(d.ri, d);
    }
  }
  const answers: string[] = [];
  let allowed = 0;
  // One budget of time for the conditions of the whole batch (domain/authz/conditions.ts).
  const budget = newBudget();
  // Actors named in `context.act` (the request's, or an item's own): each distinct check asked once.
  const actorChecks = new Map<string, JsonText<Decision> | null>();
  for (let i = 0; i < slots.length; i++) {
    const item = plan.items[i];
    let d = "missing" in item
      ? incomplete(item.missing)
      : (item.ri !== null ? byObject.get(slots[i])?.get(item.ri) : undefined) ?? byQuestion[slots[i]];
    const own = req.evaluations?.[i];
    if (!("missing" in item) && isPending(d.obj)) {
      d = settle(d.obj, {
        subject: (own?.subject ?? req.subject) as Subject,
        action: (own?.action ?? req.action) as Action,
        resource: (own?.resource ?? req.resource) as Resource,
        context: own?.context ?? req.context,
      }, budget);
    }
    const actors = actorsAsked(own?.context ?? req.context);
    if (actors !== undefined && d.allowed && !("missing" in item)) {
      const key = JSON.stringify([actors, item.rt, item.an]);
      if (!actorChecks.has(key)) {
        actorChecks.set(key, await actorDecision(sql, projectId, actors, item.rt ?? "", item.an ?? ""));
      }
      const refused = actorChecks.get(key);
      if (refused) d = { allowed: false, obj: refused };
    }
    answers.push(reasons ? d.obj : bare(d.allowed));
    if (d.allowed) allowed++;
    if (
      plan.semantic === "deny_on_first_deny"
        ? !d.allowed
        : plan.semantic === "permit_on_first_permit" && d.allowed
    ) {
      break;
    }
  }
  return {
    text: `{"evaluations":[${answers.join(",")}]}` as JsonText<EvaluationsResponse>,
    allowed,
    denied: answers.length - allowed,
  };
}

/**
 * Each distinct question of a batch's items (without its object) once, numbered from 1; each item's object with
 * its question's number; and each item's question (-1 for an incomplete item). A batch asks few questions (of many
 * objects): the first ones are found by comparing, the rest by key. An object asked twice with one question is
 * sent twice and answered alike (one snapshot): sets to tell them apart cost a batch of 100 distinct objects about
 * a tenth of the service thread's time under load. A question asked in an organization keeps its object (the
 * object decides whether the organization's roles count), so each of its objects is a question of its own.
 */
function numbered(
  items: (Question | { missing: string[] })[],
): { questions: BatchQuestion[]; objects: { q: number; ri: string }[]; slots: number[] } {
  const questions: BatchQuestion[] = [];
  const byKey = new Map<string, number>();
  const numberOf = (x: Question): number => {
    const ri = x.org === null ? undefined : x.ri;
    for (let k = 0; k < questions.length && k < SCANNED; k++) {
      const y = questions[k];
      if (
        y.st === x.st && y.si === x.si && y.rt === x.rt && y.an === x.an && y.org === (x.org ?? undefined) &&
        y.ri === ri
      ) {
        return k + 1;
      }
    }
    const key = questions.length > SCANNED ? questionKey(x) : undefined;
    const known = key === undefined ? undefined : byKey.get(key);
    if (known !== undefined) return known;
    const q = questions.push(
      x.org === null
        ? { st: x.st, si: x.si, rt: x.rt, an: x.an }
        : { st: x.st, si: x.si, rt: x.rt, an: x.an, ri: x.ri, org: x.org },
    );
    if (q > SCANNED) byKey.set(key ?? questionKey(x), q);
    return q;
  };
  const objects: { q: number; ri: string }[] = [];
  const slots = new Array<number>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if ("missing" in item) {
      slots[i] = -1;
      continue;
    }
    const q = slots[i] = numberOf(item);
    if (item.ri === null || item.org !== null) continue;
    objects.push({ q, ri: item.ri });
  }
  return { questions, objects, slots };
}

/**
 * A question's key: its four strings (and, in an organization, the organization and the object) after a mask of
 * which are null. They hold no NUL byte (`usable`), so the NULs between them make the key unambiguous.
 */
function questionKey(q: Question): string {
  const mask = (q.st === null ? 1 : 0) | (q.si === null ? 2 : 0) | (q.rt === null ? 4 : 0) |
    (q.an === null ? 8 : 0) | (q.org !== null && q.ri === null ? 16 : 0);
  const key = `${mask}\0${q.st ?? ""}\0${q.si ?? ""}\0${q.rt ?? ""}\0${q.an ?? ""}`;
  return q.org === null ? key : `${key}\0${q.org}\0${q.ri ?? ""}`;
}

/** The answer to an item still incomplete after the defaults: denied, naming what it lacks. */
function incomplete(missing: string[]): { allowed: boolean; obj: string } {
  const reason = JSON.stringify({ code: "invalid_request", missing });
  return { allowed: false, obj: `{"decision":false,"context":{"reason_admin":${reason}}}` };
}

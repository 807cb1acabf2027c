/**
 * Decisions through conditions: the statement of db/authz/authzen.ts answers `{"pending": …}` when the subject
 * holds the permission only through conditions (its role's on the permission, or live grants with one), with
 * what they read from the model; this settles it with what the request says, in the order the statement found
 * them: the role's condition, then the organization role's (in the organization asked about), then each
 * grant's (nearest object first; a grant needs its own condition and its role's). The first true one allows; else the decision is false with `condition_error` (the first that could
 * not be evaluated) or `condition_false` (the first false one), naming the role or grant and the permission.
 */
import type { Action, Resource, Subject } from "../../openapi/authzen.ts";
import {
  allHold,
  type Budget,
  type ConditionInput,
  evaluateCondition,
  firstOversized,
  mapOf,
  MAX_INPUT_BYTES,
  newBudget,
  type Outcome,
} from "./conditions.ts";

/** What the statement read for conditions (db/authz/authzen.ts `pendingObject`). */
type Pending = {
  role_id: string | null;
  permission_id: string;
  role_condition: string | null;
  /** The organization asked about, when its roles hold the permission (under conditions) on the object. */
  organization_id: string | null;
  /** The subject's organization roles there holding the permission under a condition, by id. */
  org_roles: { role_id: string; condition: string }[] | null;
  subject: Record<string, unknown> | null;
  /** The registered object's stored properties; null when the object is not registered. */
  object: Record<string, unknown> | null;
  grants:
    | {
      grant_id: string;
      object_id: string;
      role_id: string;
      condition: string | null;
      role_condition: string | null;
    }[]
    | null;
  now: string;
};

/** The request's side of a question: its entities and context as sent. */
export type Asked = {
  subject: Subject;
  action: Action;
  resource: Resource;
  context?: Record<string, unknown>;
};

/** Whether a decision's JSON text is one to settle. */
export function isPending(text: string): boolean {
  return text.startsWith('{"pending"');
}

/**
 * The decision for a pending one, as JSON text (`{"decision":…,"context":{"reason_admin":…}}`), and whether
 * it allows. A registered object's properties are its stored ones; an unregistered object's are the request's
 * `resource.properties`; the subject's are always its stored ones (a request never overrides them).
 */
export function settle(
  text: string,
  asked: Asked,
  budget: Budget = newBudget(),
): { allowed: boolean; obj: string } {
  const p = (JSON.parse(text) as { pending: Pending }).pending;
  const input: ConditionInput = {
    subject: { type: asked.subject.type, id: asked.subject.id, properties: p.subject ?? {} },
    resource: {
      type: asked.resource.type,
      id: asked.resource.id,
      properties: p.object ?? mapOf(asked.resource.properties),
    },
    action: { name: asked.action.name, properties: mapOf(asked.action.properties) },
    context: mapOf(asked.context),
    now: new Date(p.now),
  };
  // What the request sends is read only up to a size (a long list would make one evaluation slow).
  const large = firstOversized([
    [asked.resource.id, "resource.id"],
    [asked.context, "context"],
    [asked.action.properties, "action.properties"],
    [p.object === null ? asked.resource.properties : undefined, "resource.properties"],
  ]);
  const evaluate = (c: string): Outcome =>
    large === null
      ? evaluateCondition(c, input, budget)
      : { error: `the request's ${large} is larger than the ${MAX_INPUT_BYTES} bytes conditions read` };
  let failed: { by: Record<string, string>; outcome: Outcome } | undefined;
  const fail = (by: Record<string, string>, outcome: Outcome) => {
    if (!failed || ("error" in outcome && !("error" in failed.outcome))) failed = { by, outcome };
  };
  if (p.role_condition !== null && p.role_id !== null) {
    const outcome = evaluate(p.role_condition);
    const by = { role_id: p.role_id };
    if ("value" in outcome && outcome.value) return allow("role_permission", by, p.permission_id);
    fail(by, outcome);
  }
  for (const r of p.org_roles ?? []) {
    const outcome = evaluate(r.condition);
    const by = { role_id: r.role_id, organization_id: p.organization_id! };
    if ("value" in outcome && outcome.value) return allow("organization_role", by, p.permission_id);
    fail(by, outcome);
  }
  for (const g of p.grants ?? []) {
    const by = { grant_id: g.grant_id, object_id: g.object_id };
    const outcome = allHold([g.role_condition, g.condition], evaluate);
    if ("value" in outcome && outcome.value) return allow("object_grant", by, p.permission_id);
    fail(by, outcome);
  }
  const reason: Record<string, unknown> = failed === undefined
    ? { code: "no_permission", ...(p.role_id === null ? {} : { role_id: p.role_id }) }
    : "error" in failed.outcome
    ? { code: "condition_error", ...failed.by, permission_id: p.permission_id, message: failed.outcome.error }
    : { code: "condition_false", ...failed.by, permission_id: p.permission_id };
  return { allowed: false, obj: JSON.stringify({ decision: false, context: { reason_admin: reason } }) };
}

function allow(code: string, by: Record<string, string>, permissionId: string) {
  const reason = { code, ...by, permission_id: permissionId, conditional: true };
  return { allowed: true, obj: JSON.stringify({ decision: true, context: { reason_admin: reason } }) };
}

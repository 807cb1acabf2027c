/**
 * The AuthZEN Authorization API 1.0 (`/access/v1/…`) and its metadata (`/.well-known/authzen-configuration`):
 * the service as a Policy Decision Point on each project's live permissions (docs/authzen.md).
 */
import { countDecisions } from "../../../telemetry/families.ts";
import type { Context } from "hono";
import {
  decisionAnswer,
  evaluateMany,
  evaluateOne,
  evaluationReadOf,
} from "../../../domain/authz/authzen.ts";
import {
  searchActionsOf,
  searchResourcesOf,
  searchSubjectsOf,
} from "../../../domain/authz/authzen_search.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import {
  ActionSearchRequest,
  ActionSearchResponse,
  AuthzenConfiguration,
  Decision,
  EntitySearchResponse,
  EvaluationRequest,
  EvaluationsRequest,
  EvaluationsResponse,
  MAX_EVALUATIONS,
  ResourceSearchRequest,
  SubjectSearchRequest,
} from "../../../openapi/authzen.ts";
import type { App, AppEnv } from "../../env.ts";
import { guardedRoute, publicRoute, refuseDeepNesting } from "../operation.ts";
import { extensibleJsonBody, jsonResponse, jsonText } from "../responses.ts";

const REASONS = "Every decision carries `context.reason_admin.code`: `role_permission` (with `role_id`), " +
  "`client_permission` (with `client_id`), `object_grant` (with `grant_id` and `object_id`: a live grant of a " +
  "role on the object or an ancestor), `grant_expired` (only an expired grant would have allowed it), " +
  "`no_permission`, `subject_inactive`, `project_inactive`, " +
  "`unknown_subject`, `unknown_resource_type`, `unknown_action` (an unknown subject, type or action is a " +
  "false decision, never an error). Through a condition: allowed with `role_permission` or `object_grant` " +
  "and `conditional: true` (and `permission_id`); denied with `condition_false` or `condition_error` (an " +
  "evaluation error: a missing property, a type mismatch; with `message`), naming the role (`role_id`) or " +
  "the grant (`grant_id`, `object_id`) and `permission_id`. A client with `decision_reasons` false gets bare " +
  '`{"decision": …}` answers.';

const MAPPING = "The token's project (its `aud`) is the one asked about. `subject.type` `user`: `id` is a " +
  "user's id or, when no user has it, an `external_user_id`; `client`: a client id. `resource.type` is a " +
  "resource code and `action.name` one of its permission codes. Allowed when the subject is active and " +
  "holds that permission now: project-wide (a user through their role, a client directly), or through a live " +
  "grant of a role holding it on the object `resource.id` or one of its ancestors (tried only when the " +
  "project-wide permission is missing). A permission a role holds under a condition, or a grant with one, " +
  "allows only when its CEL expression is true (docs/authzen.md § Conditions): it reads the subject's " +
  "stored `properties`, a registered object's stored `properties` (else the request's " +
  "`resource.properties`), `action.properties`, `context` and the database's clock; a request never " +
  "overrides a stored property.";

const INPUT =
  "Bad input (malformed JSON, another media type, a missing entity or field, a wrong type, nesting " +
  "deeper than 32 levels) answers 400 `invalid_params`, each `details[].field` a JSON pointer into the body; " +
  "unknown fields are ignored; `X-Request-ID` is echoed as sent.";

export const evaluateAccessRoute = guardedRoute({
  method: "post",
  path: "/access/v1/evaluation",
  operationId: "evaluateAccess",
  tags: ["Access"],
  summary: "Decide one access request (AuthZEN Access Evaluation)",
  permission: "access:evaluate",
  scope: "audience",
  description: `${MAPPING} ${REASONS} ${INPUT}`,
  request: { body: extensibleJsonBody(EvaluationRequest) },
  responses: { 200: jsonResponse(Decision, "The decision and its reason") },
  readsBody: (body, token) => evaluationReadOf(token, body),
});

export const evaluateAccessBatchRoute = guardedRoute({
  method: "post",
  path: "/access/v1/evaluations",
  operationId: "evaluateAccessBatch",
  tags: ["Access"],
  summary: "Decide many access requests at once (AuthZEN Access Evaluations)",
  permission: "access:evaluate",
  scope: "audience",
  description:
    `Up to ${MAX_EVALUATIONS} evaluations (more: 400 \`invalid_params\`), decided in one snapshot ` +
    "and answered in order. The top-level `subject`, `action`, `resource` and `context` are defaults, each " +
    "replacing an item's missing entity whole. `options.evaluations_semantic`: `execute_all` (default), " +
    "`deny_on_first_deny` or `permit_on_first_permit` (the answers stop after the first deny, or permit). " +
    "An item still lacking an entity is answered `false` with reason `invalid_request` (and `missing`, its " +
    "JSON pointers), the others decided. Without `evaluations` (or with none) the request is one evaluation " +
    `and is answered as one. ${MAPPING} ${REASONS} ${INPUT}`,
  request: { body: extensibleJsonBody(EvaluationsRequest) },
  responses: { 200: jsonResponse(EvaluationsResponse, "The decisions, in order") },
  // A batch's statement runs after the gate's (its body is read once, by the validator), shared with the
  // batches asked in the same turn of the event loop (db/authz/authzen.ts).
});

const CONDITIONS =
  "A condition that cannot be evaluated excludes its candidate (the search does not fail). " +
  "Through conditions a search evaluates every candidate, whatever the page, so that `page.total` is exact.";

const PAGING =
  "Pages of `page.limit` (1 to 1000, default 100); `page.next_token` is empty on the last page, " +
  "and a request with a token must repeat the first request exactly (else 400 `invalid_params`, " +
  "`/page/token`); `page.total` counts every result now. Nothing is ever cut silently.";

export const searchSubjectsRoute = guardedRoute({
  method: "post",
  path: "/access/v1/search/subject",
  operationId: "searchSubjects",
  tags: ["Access"],
  summary: "Who may do this (AuthZEN Subject Search)",
  permission: "access:search",
  scope: "audience",
  description: "The active users (`subject.type` `user`, each named by its `external_user_id` when it has " +
    "one, else by its id) or clients (`client`) that hold `action.name` on `resource.type` now, by id: " +
    "project-wide, or through a live grant on the object `resource.id` or one of its ancestors. One that " +
    "holds it only under conditions (its role's, a grant's or the grant's role's) is a result when one holds, " +
    "evaluated with its stored properties and, as `subject.id`, the id it is answered with (the id a decision " +
    "would name it by); `resource.properties` are the registered object's stored ones, else the request's. " +
    `\`subject.id\` is ignored; an unknown type, resource or action gives no results. ${CONDITIONS} ${PAGING} ` +
    INPUT,
  request: { body: extensibleJsonBody(SubjectSearchRequest) },
  responses: { 200: jsonResponse(EntitySearchResponse, "A page of subjects") },
});

export const searchResourcesRoute = guardedRoute({
  method: "post",
  path: "/access/v1/search/resource",
  operationId: "searchResources",
  tags: ["Access"],
  summary: "On which objects (AuthZEN Resource Search)",
  permission: "access:search",
  scope: "audience",
  description: "The registered objects of `resource.type` the subject may do `action.name` on now, by id " +
    "(byte-wise): all of them when it holds the permission project-wide, else those its live grants reach " +
    "(each grant's object and its descendants). Where it holds it only under conditions (its role's, or a " +
    "grant's or the grant's role's), each object is evaluated with its stored properties, the subject's " +
    "stored ones, `action.properties` and `context`; an object an unconditional grant reaches is a result " +
    "without evaluation. An unknown or inactive subject, type or action gives no results. `resource.id` is " +
    `ignored. ${CONDITIONS} ${PAGING} ${INPUT}`,
  request: { body: extensibleJsonBody(ResourceSearchRequest) },
  responses: { 200: jsonResponse(EntitySearchResponse, "A page of objects") },
});

export const searchActionsRoute = guardedRoute({
  method: "post",
  path: "/access/v1/search/action",
  operationId: "searchActions",
  tags: ["Access"],
  summary: "What may this subject do here (AuthZEN Action Search)",
  permission: "access:evaluate",
  scope: "audience",
  description: "The permission codes of `resource.type` the subject holds now, by code. One its role holds " +
    "under a condition is listed when that condition, or that of a live grant on `resource.id` or an ancestor " +
    "(with the grant's role's), holds for the resource (a registered object's stored properties, else " +
    "`resource.properties`) and `context`. An unknown or inactive subject, or an unknown type, gives no " +
    `results. ${CONDITIONS} ${PAGING} ${INPUT}`,
  request: { body: extensibleJsonBody(ActionSearchRequest) },
  responses: { 200: jsonResponse(ActionSearchResponse, "A page of actions") },
});

export const getAuthzenConfigurationRoute = publicRoute({
  method: "get",
  path: "/.well-known/authzen-configuration",
  operationId: "getAuthzenConfiguration",
  tags: ["Access"],
  summary: "AuthZEN Policy Decision Point metadata",
  description: "`policy_decision_point` is the service's `PUBLIC_URL`; every endpoint is under it.",
  responses: { 200: jsonResponse(AuthzenConfiguration, "The PDP metadata") },
});

/** JSON pointer (RFC 6901) of a path into the body. */
function pointer(path: PropertyKey[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}

type Issue = { path: PropertyKey[]; message: string };

/**
 * Validation failures as `invalid_params` whose `details` name each field by its JSON pointer; a body nesting
 * deeper than the limit is refused as that, whatever else is wrong with it (valid, only its free-form parts
 * can nest: the schemas keep nothing else they were not told of).
 */
async function pointerHook(
  result: { success: boolean; data?: unknown; error?: { issues: Issue[] } },
  c: Context<AppEnv>,
) {
  if (result.success) refuseDeepBody(result.data as Body);
  else {
    // Only a JSON body can be too deep; one that is not JSON is refused just below like any invalid one.
    refuseDeepNesting([await c.req.json().catch(() => null)], 0);
    throw new AppError("invalid_params", {
      details: (result.error?.issues ?? []).map((i) => ({ field: pointer(i.path), issue: i.message })),
    });
  }
}

type Entities = {
  subject?: { properties?: unknown };
  action?: { properties?: unknown };
  resource?: { properties?: unknown };
  context?: unknown;
};

/** A validated AuthZEN body, as far as its free-form parts go. */
type Body = Entities & { evaluations?: Entities[]; page?: { properties?: unknown } };

/**
 * The free-form parts of a validated AuthZEN body, each with the depth of what holds it: a request's at 1 (its
 * entities' and its page's properties at 2), a batch item's at 3.
 */
function refuseDeepBody(req: Body): void {
  const parts = (e: Entities, at: number) => {
    refuseDeepNesting([e.subject?.properties, e.action?.properties, e.resource?.properties], at + 1);
    refuseDeepNesting([e.context], at);
  };
  parts(req, 1);
  refuseDeepNesting([req.page?.properties], 2);
  for (const item of req.evaluations ?? []) parts(item, 3);
}

export function registerAuthzenRoutes(app: App) {
  app.openapi(evaluateAccessRoute, async (c) => {
    const { sql } = c.get("deps");
    const req = c.req.valid("json");
    const { projectId, decisionReasons, organizationId } = c.get("principal");
    const answer = decisionAnswer(
      await evaluateOne(sql, projectId, req, c.get("attached"), decisionReasons, organizationId ?? null),
    );
    countDecisions("evaluation", answer);
    return jsonText(c, answer.text, 200);
  }, pointerHook as never);
  app.openapi(evaluateAccessBatchRoute, async (c) => {
    const { sql } = c.get("deps");
    const { projectId, decisionReasons, organizationId } = c.get("principal");
    const answer = await evaluateMany(
      sql,
      projectId,
      c.req.valid("json"),
      decisionReasons,
      organizationId ?? null,
    );
    countDecisions("evaluations", answer);
    return jsonText(c, answer.text, 200);
  }, pointerHook as never);
  app.openapi(searchSubjectsRoute, async (c) => {
    return c.json(
      await searchSubjectsOf(c.get("deps").sql, c.get("principal").projectId, c.req.valid("json")),
      200,
    );
  }, pointerHook as never);
  app.openapi(searchResourcesRoute, async (c) => {
    return c.json(
      await searchResourcesOf(c.get("deps").sql, c.get("principal").projectId, c.req.valid("json")),
      200,
    );
  }, pointerHook as never);
  app.openapi(searchActionsRoute, async (c) => {
    return c.json(
      await searchActionsOf(c.get("deps").sql, c.get("principal").projectId, c.req.valid("json")),
      200,
    );
  }, pointerHook as never);
  app.openapi(getAuthzenConfigurationRoute, (c) => {
    const base = c.get("deps").config.publicUrl;
    c.header("Cache-Control", "public, max-age=3600");
    return c.json({
      policy_decision_point: base,
      access_evaluation_endpoint: `${base}${evaluateAccessRoute.path}`,
      access_evaluations_endpoint: `${base}${evaluateAccessBatchRoute.path}`,
      search_subject_endpoint: `${base}${searchSubjectsRoute.path}`,
      search_resource_endpoint: `${base}${searchResourcesRoute.path}`,
      search_action_endpoint: `${base}${searchActionsRoute.path}`,
    }, 200);
  });
}

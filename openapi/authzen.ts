/**
 * The AuthZEN Authorization API 1.0 shapes (OpenID Foundation, `api/authorization-api-1_0.md` and
 * `api/schemas/`): subjects, resources, actions, context, decisions, searches and the PDP metadata. Unknown
 * fields are ignored (the specification's forward compatibility); conditions read the entities' `properties`
 * and the `context` (domain/authz/decide.ts).
 */
import { z } from "@hono/zod-openapi";

/** At most this many evaluations in one request. */
export const MAX_EVALUATIONS = 1000;
/** At most this many results in one page of a search; `DEFAULT_PAGE_LIMIT` when `page.limit` is absent. */
export const MAX_PAGE_LIMIT = 1000;
export const DEFAULT_PAGE_LIMIT = 100;

const Properties = z.record(z.string(), z.unknown()).openapi({
  description:
    "Attributes of the entity, which conditions read: `resource.properties` for an object that is " +
    "not registered (a registered object's stored ones win), `action.properties` as sent. " +
    "`subject.properties` are ignored: the subject's stored ones are read.",
});

export const Context = z.record(z.string(), z.unknown()).openapi("AuthzenContext", {
  description:
    "The environment of the request. `act` (RFC 8693 §4.1, as a token of an exchange carries it: " +
    '`{"sub": <client id>}`, nested for a chain) names the clients acting for the subject: the decision then ' +
    "also needs every one of them to be an active client of the project whose delegation has the permission " +
    "(else `actor_not_delegated`, naming the first that lacks it; a malformed `act` is `invalid_request`). " +
    "`organization_id` (a string) names the organization the question is asked in (else the token's " +
    "`org_id`, for a token of an organization): a user's organization roles there count too, on that " +
    "organization's objects only (registered with it, or under an ancestor that is; docs/organizations.md). " +
    "Conditions read it whole as `context` (docs/authzen.md § Conditions).",
  example: { time: "1985-10-26T01:22-07:00" },
});

const SubjectType = z.string().openapi({
  description: "`user` (a user of the project) or `client` (a machine client of the project). Another type " +
    "names nobody: the decision is false with `unknown_subject`.",
  example: "user",
});
const SubjectId = z.string().openapi({
  description: "For `user`: the user's id or, when no user of the project has that id, its " +
    "`external_user_id` (the calling system's own id). For `client`: the client's id.",
  example: "alice",
});
const ResourceType = z.string().openapi({
  description: "A resource `code` of the project (case-insensitive).",
  example: "record",
});
const ResourceId = z.string().openapi({
  description: "One object of that resource: any string; a registered object's id (the resource's objects) " +
    "when grants on it or its ancestors are to count.",
  example: "record-1",
});
const ActionName = z.string().openapi({
  description: "A permission `code` of the resource (case-insensitive).",
  example: "read",
});

export const Subject = z.object({ type: SubjectType, id: SubjectId, properties: Properties.optional() })
  .openapi("AuthzenSubject");
export const Resource = z.object({ type: ResourceType, id: ResourceId, properties: Properties.optional() })
  .openapi("AuthzenResource");
export const Action = z.object({ name: ActionName, properties: Properties.optional() }).openapi(
  "AuthzenAction",
);
export type Subject = z.infer<typeof Subject>;
export type Resource = z.infer<typeof Resource>;
export type Action = z.infer<typeof Action>;

export const EvaluationRequest = z.object({
  subject: Subject,
  action: Action,
  resource: Resource,
  context: Context.optional(),
}).openapi("AccessEvaluationRequest");
export type EvaluationRequest = z.infer<typeof EvaluationRequest>;

/** An entity of a batch: complete, or absent (then the top-level default is used, whole). */
const PartialSubject = z.object({
  type: SubjectType.optional(),
  id: SubjectId.optional(),
  properties: Properties.optional(),
});
const PartialResource = z.object({
  type: ResourceType.optional(),
  id: ResourceId.optional(),
  properties: Properties.optional(),
});
const PartialAction = z.object({ name: ActionName.optional(), properties: Properties.optional() });

const EvaluationItem = z.object({
  subject: PartialSubject.optional(),
  action: PartialAction.optional(),
  resource: PartialResource.optional(),
  context: Context.optional(),
}).openapi("AccessEvaluationItem", {
  description:
    "One question; an entity it omits is the request's top-level one (replaced whole, never merged).",
});
export type EvaluationItem = z.infer<typeof EvaluationItem>;

export const SEMANTICS = ["execute_all", "deny_on_first_deny", "permit_on_first_permit"] as const;
export type Semantic = (typeof SEMANTICS)[number];
const SemanticSchema = z.enum(SEMANTICS).openapi("EvaluationsSemantic", {
  description: "`execute_all` (default): every answer. `deny_on_first_deny`: the answers up to and " +
    "including the first deny. `permit_on_first_permit`: up to and including the first permit.",
});

export const EvaluationsRequest = z.object({
  subject: PartialSubject.optional(),
  action: PartialAction.optional(),
  resource: PartialResource.optional(),
  context: Context.optional(),
  evaluations: z.array(EvaluationItem).max(MAX_EVALUATIONS, `at most ${MAX_EVALUATIONS} evaluations`)
    .optional()
    .openapi({
      description: `Up to ${MAX_EVALUATIONS} questions, answered in order. Absent or empty: the request is ` +
        "one evaluation (its top-level `subject`, `action` and `resource` are then required).",
    }),
  options: z.object({
    evaluations_semantic: SemanticSchema.optional(),
  }).optional(),
}).openapi("AccessEvaluationsRequest");
export type EvaluationsRequest = z.infer<typeof EvaluationsRequest>;

export const REASON_CODES = [
  "role_permission",
  "organization_role",
  "client_permission",
  "object_grant",
  "grant_expired",
  "no_permission",
  "subject_inactive",
  "project_inactive",
  "unknown_subject",
  "unknown_resource_type",
  "unknown_action",
  "invalid_request",
  "actor_not_delegated",
  "condition_false",
  "condition_error",
] as const;
const ReasonCode = z.enum(REASON_CODES).openapi("AuthzenReasonCode", {
  description: "What decided it; a stable code (docs/authzen.md).",
});

const Reason = z.object({
  code: ReasonCode,
  role_id: z.string().optional().openapi({
    description: "`role_permission`: the user's role that holds the permission; `no_permission`: the " +
      "user's role, which does not (absent when the user has none); `condition_false`, `condition_error`: " +
      "the role whose condition on the permission denied it; `organization_role`: the member's organization " +
      "role that holds it",
  }),
  organization_id: z.string().optional().openapi({
    description: "`organization_role` (and `condition_false`, `condition_error` of one): the organization " +
      "the question was asked in, where the subject is a member with that role",
  }),
  client_id: z.string().optional().openapi({
    description: "`client_permission`: the client; `actor_not_delegated`: the actor of `context.act` whose " +
      "delegation lacks the permission (or which is no active client of the project with a delegation)",
  }),
  grant_id: z.string().optional().openapi({
    description: "`object_grant`: the live grant that allows it (the nearest to the object); " +
      "`grant_expired`: an expired grant that would have allowed it; `condition_false`, `condition_error`: " +
      "the grant whose condition (or its role's) denied it",
  }),
  object_id: z.string().optional().openapi({
    description: "With `grant_id`: the object the grant is on (the object asked about, or an ancestor)",
  }),
  permission_id: z.string().optional().openapi({
    description: "Through a condition (`conditional`, `condition_false`, `condition_error`): the permission",
  }),
  conditional: z.literal(true).optional().openapi({
    description:
      "Allowed through a condition that was true (`role_permission`, `organization_role` or `object_grant`)",
  }),
  message: z.string().optional().openapi({
    description:
      "`condition_error`: why the condition could not be evaluated (a missing key, a type mismatch)",
  }),
  missing: z.array(z.string()).optional().openapi({
    description: "`invalid_request`: JSON pointers of the entities the evaluation lacks once the defaults " +
      "are applied",
  }),
}).openapi("AuthzenReason");

export const Decision = z.object({
  decision: z.boolean(),
  context: z.object({ reason_admin: Reason }).optional(),
}).openapi("AccessDecision", {
  example: { decision: true, context: { reason_admin: { code: "role_permission", role_id: "0196…" } } },
});

export type Decision = z.infer<typeof Decision>;

export const EvaluationsResponse = z.union([
  z.object({ evaluations: z.array(Decision) }),
  Decision,
]).openapi("AccessEvaluationsResponse", {
  description: "`evaluations` in the order asked; a request without evaluations is answered as one decision.",
});
export type EvaluationsResponse = z.infer<typeof EvaluationsResponse>;

const Page = z.object({
  token: z.string().optional().openapi({ description: "The `next_token` of the previous page" }),
  limit: z.number().int("must be a whole number").min(1, "at least 1").max(
    MAX_PAGE_LIMIT,
    `at most ${MAX_PAGE_LIMIT}`,
  ).optional().openapi({ description: `1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT})` }),
  properties: z.record(z.string(), z.unknown()).optional(),
}).openapi("AuthzenPageRequest", {
  description: "With a token, every entity, the context and the limit must be those of the first request: " +
    "otherwise 400 `invalid_params` (`/page/token`).",
});

const SearchedSubject = z.object({
  type: SubjectType,
  id: z.string().optional().openapi({ description: "Ignored" }),
  properties: Properties.optional(),
});
const SearchedResource = z.object({
  type: ResourceType,
  id: z.string().optional().openapi({ description: "Ignored" }),
  properties: Properties.optional(),
});

export const SubjectSearchRequest = z.object({
  subject: SearchedSubject,
  action: Action,
  resource: Resource,
  context: Context.optional(),
  page: Page.optional(),
}).openapi("SubjectSearchRequest");
export const ResourceSearchRequest = z.object({
  subject: Subject,
  action: Action,
  resource: SearchedResource,
  context: Context.optional(),
  page: Page.optional(),
}).openapi("ResourceSearchRequest");
export const ActionSearchRequest = z.object({
  subject: Subject,
  resource: Resource,
  context: Context.optional(),
  page: Page.optional(),
}).openapi("ActionSearchRequest");
export type SubjectSearchRequest = z.infer<typeof SubjectSearchRequest>;
export type ResourceSearchRequest = z.infer<typeof ResourceSearchRequest>;
export type ActionSearchRequest = z.infer<typeof ActionSearchRequest>;

const PageResponse = z.object({
  next_token: z.string().openapi({ description: "Empty when this is the last page" }),
  count: z.number().int().openapi({ description: "Results in this page" }),
  total: z.number().int().openapi({ description: "Results over all pages, now" }),
}).openapi("AuthzenPage");
export type PageResponse = z.infer<typeof PageResponse>;

export const EntityResult = z.object({ type: z.string(), id: z.string() }).openapi("AuthzenEntity");
export const ActionResult = z.object({ name: z.string() }).openapi("AuthzenActionName");

export const EntitySearchResponse = z.object({ page: PageResponse, results: z.array(EntityResult) })
  .openapi("EntitySearchResponse");
export const ActionSearchResponse = z.object({ page: PageResponse, results: z.array(ActionResult) })
  .openapi("ActionSearchResponse");
export type EntitySearchResponse = z.infer<typeof EntitySearchResponse>;
export type ActionSearchResponse = z.infer<typeof ActionSearchResponse>;

export const AuthzenConfiguration = z.object({
  policy_decision_point: z.string().openapi({ description: "The service's PUBLIC_URL" }),
  access_evaluation_endpoint: z.string(),
  access_evaluations_endpoint: z.string(),
  search_subject_endpoint: z.string(),
  search_resource_endpoint: z.string(),
  search_action_endpoint: z.string(),
}).openapi("AuthzenConfiguration");
export type AuthzenConfiguration = z.infer<typeof AuthzenConfiguration>;

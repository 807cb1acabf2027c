/**
 * createAccessClient: the AuthZEN Authorization API 1.0 of the service, typed (docs/authzen.md). Decisions
 * about the project of the token it sends (a token whose principal holds `access:evaluate`, and
 * `access:search` for subject and resource search); every failed call rejects with an ApiError.
 */
import { ApiError } from "./errors.ts";

/** A user (`type: "user"`, its id or external id) or a machine client (`type: "client"`, its id). */
export type AccessSubject = {
  type: string;
  id: string;
  properties?: Record<string, unknown>;
};
/** `type` is a resource code; `id` one object of it. */
export type AccessResource = {
  type: string;
  id: string;
  properties?: Record<string, unknown>;
};
/** `name` is a permission code of the resource. */
export type AccessAction = {
  name: string;
  properties?: Record<string, unknown>;
};
export type AccessContext = Record<string, unknown>;

export type AccessRequest = {
  subject: AccessSubject;
  action: AccessAction;
  resource: AccessResource;
  context?: AccessContext;
};

/** The stable codes of `context.reason_admin.code`. */
export type AccessReasonCode =
  | "role_permission"
  | "client_permission"
  | "object_grant"
  | "grant_expired"
  | "no_permission"
  | "subject_inactive"
  | "project_inactive"
  | "unknown_subject"
  | "unknown_resource_type"
  | "unknown_action"
  | "invalid_request";

export type AccessReason = {
  code: AccessReasonCode;
  role_id?: string;
  client_id?: string;
  /** `object_grant`: the grant that allows it; `grant_expired`: an expired one that would have. */
  grant_id?: string;
  /** With `grant_id`: the object the grant is on (the one asked about, or an ancestor). */
  object_id?: string;
  missing?: string[];
};
export type AccessDecision = {
  decision: boolean;
  context?: { reason_admin: AccessReason };
};

export type EvaluationsSemantic =
  | "execute_all"
  | "deny_on_first_deny"
  | "permit_on_first_permit";

/** Up to 1000 evaluations; the top-level entities are defaults for the items that omit them. */
export type AccessManyRequest = {
  subject?: AccessSubject;
  action?: AccessAction;
  resource?: AccessResource;
  context?: AccessContext;
  evaluations: Partial<AccessRequest>[];
  options?: { evaluations_semantic?: EvaluationsSemantic };
};

export type SearchPageRequest = { token?: string; limit?: number };
export type SearchPage = { next_token: string; count: number; total: number };
export type EntityPage = {
  page: SearchPage;
  results: { type: string; id: string }[];
};
export type ActionPage = { page: SearchPage; results: { name: string }[] };

export type SubjectSearch = {
  subject: { type: string };
  action: AccessAction;
  resource: AccessResource;
  context?: AccessContext;
  page?: SearchPageRequest;
};
export type ResourceSearch = {
  subject: AccessSubject;
  action: AccessAction;
  resource: { type: string };
  context?: AccessContext;
  page?: SearchPageRequest;
};
export type ActionSearch = {
  subject: AccessSubject;
  resource: AccessResource;
  context?: AccessContext;
  page?: SearchPageRequest;
};

export type AccessClient = {
  /** One decision. */
  evaluate(req: AccessRequest): Promise<AccessDecision>;
  /** Many decisions in one request and one snapshot, in order (cut short by the semantic, if any). */
  evaluateMany(req: AccessManyRequest): Promise<AccessDecision[]>;
  /** A page of who may do the action on the resource. */
  searchSubjects(req: SubjectSearch): Promise<EntityPage>;
  /** A page of the registered objects the subject may act on (project-wide, or through its grants). */
  searchResources(req: ResourceSearch): Promise<EntityPage>;
  /** A page of what the subject may do on the resource. */
  searchActions(req: ActionSearch): Promise<ActionPage>;
  /** Every result of a search, page after page (`search` is one of the three methods above). */
  all<Q extends { page?: SearchPageRequest }, R>(
    search: (req: Q) => Promise<{ page: SearchPage; results: R[] }>,
    req: Q,
  ): AsyncGenerator<R>;
};

export type AccessClientOptions = {
  /** The service's address, e.g. `https://auth.example.com`. */
  baseUrl: string;
  /** The bearer token to send, or a function giving it (e.g. an admin client's `accessToken`). */
  token: string | (() => Promise<string>);
  /** The fetch to send requests with; the platform's by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
};

export function createAccessClient(options: AccessClientOptions): AccessClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const send = options.fetch ??
    ((url: string, init: RequestInit) => fetch(url, init));
  const token = typeof options.token === "string"
    ? () => Promise.resolve(options.token as string)
    : options.token;

  async function post<T>(path: string, body: unknown): Promise<T> {
    const response = await send(`${baseUrl}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await token()}`,
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await ApiError.fromResponse(response);
    return await response.json() as T;
  }

  return {
    evaluate: (req) => post<AccessDecision>("/access/v1/evaluation", req),
    evaluateMany: async (req) => {
      if (req.evaluations.length === 0) {
        return [await post<AccessDecision>("/access/v1/evaluations", req)];
      }
      return (await post<{ evaluations: AccessDecision[] }>(
        "/access/v1/evaluations",
        req,
      )).evaluations;
    },
    searchSubjects: (req) => post<EntityPage>("/access/v1/search/subject", req),
    searchResources: (req) => post<EntityPage>("/access/v1/search/resource", req),
    searchActions: (req) => post<ActionPage>("/access/v1/search/action", req),
    async *all(search, req) {
      let token: string | undefined;
      do {
        const page = await search({
          ...req,
          page: { ...req.page, ...(token ? { token } : {}) },
        });
        yield* page.results;
        token = page.page.next_token;
      } while (token);
    },
  };
}

/**
 * createAccessClient: the AuthZEN Authorization API 1.0 of the service, typed (docs/authzen.md). Decisions
 * about the project of the token it sends (a token whose principal holds `access:evaluate`, and
 * `access:search` for subject and resource search); every failed call rejects with an ApiError.
 */
import { ApiError } from "./errors.ts";
import type { Api } from "./generated/models.ts";
import type { Wire } from "./wire.ts";

// Every shape below is the generated model's (sdk/src/generated/models.ts, from the OpenAPI document).

/** A user (`type: "user"`, its id or external id) or a machine client (`type: "client"`, its id). */
export type AccessSubject = Wire<Api.AuthzenSubject>;
/** `type` is a resource code; `id` one object of it. */
export type AccessResource = Wire<Api.AuthzenResource>;
/** `name` is a permission code of the resource. */
export type AccessAction = Wire<Api.AuthzenAction>;
export type AccessContext = NonNullable<AccessRequest["context"]>;

export type AccessRequest = Wire<Api.AccessEvaluationRequest>;

/** The stable codes of `context.reason_admin.code`. */
export type AccessReasonCode = `${Api.AuthzenReasonCode}`;

export type AccessReason = Wire<Api.AuthzenReason>;
export type AccessDecision = Wire<Api.AccessDecision>;

export type EvaluationsSemantic = `${Api.EvaluationsSemantic}`;

/** Up to 1000 evaluations; the top-level entities are defaults for the items that omit them. */
export type AccessManyRequest =
  & Wire<Api.AccessEvaluationsRequest>
  & Required<Pick<Wire<Api.AccessEvaluationsRequest>, "evaluations">>;

export type SearchPageRequest = Wire<Api.AuthzenPageRequest>;
export type SearchPage = Wire<Api.AuthzenPage>;
export type EntityPage = Wire<Api.EntitySearchResponse>;
export type ActionPage = Wire<Api.ActionSearchResponse>;

export type SubjectSearch = Wire<Api.SubjectSearchRequest>;
export type ResourceSearch = Wire<Api.ResourceSearchRequest>;
export type ActionSearch = Wire<Api.ActionSearchRequest>;

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

/**
 * The AuthZEN searches (docs/authzen.md): who may do an action, which actions a subject may do, on which
 * objects; each a page of a statement on the live model, with a page token bound to its query. Where
 * conditions are involved, the statement says so and the page is made by evaluating the candidates
 * (domain/authz/search_conditions.ts).
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import {
  searchActions,
  type SearchPage,
  searchResources,
  searchSubjects,
} from "../../db/authz/authzen_search.ts";
import {
  type ActionSearchRequest,
  type ActionSearchResponse,
  DEFAULT_PAGE_LIMIT,
  type EntitySearchResponse,
  type PageResponse,
  type ResourceSearchRequest,
  type SubjectSearchRequest,
} from "../../openapi/authzen.ts";
import { usable } from "./authzen.ts";
import {
  actionsThroughConditions,
  resourcesThroughConditions,
  subjectsThroughConditions,
} from "./search_conditions.ts";
import { decodeBase64Strict, encodeBase64Url } from "../shared/base64.ts";
import { AppError } from "../shared/errors.ts";

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
  const bytes = decodeBase64Strict(page.token);
  if (bytes === null) throw badToken("not a page token of this service");
  let parsed: unknown;
  try {
    parsed = JSON.parse(DECODER.decode(bytes));
  } catch {
    throw badToken("not a page token of this service"); // not UTF-8, or not JSON
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

/** A page of what a search found (one row more than the page, if there is more), as its results. */
function pageFrom<T, R>(
  found: SearchPage<T>,
  start: { limit: number; hash: string },
  result: (row: T & { k: string }) => R,
) {
  const rows = found.rows.slice(0, start.limit);
  return {
    page: pageOf(found.total, rows.length, rows.at(-1)?.k, start, found.rows.length > start.limit),
    results: rows.map(result),
  };
}

/**
 * Who may do the action on the resource now: users (named by their external id when they have one) or
 * clients, as `subject.type` asks; one holding it only under conditions where they hold. An unknown type,
 * resource or action: no results.
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
  const q = {
    projectId,
    type,
    resource: code,
    action: name,
    objectId: usable(resource.id),
    after: start.after,
    limit: start.limit + 1,
  };
  let found = await retryRead(() => searchSubjects(sql, q));
  if ("pending" in found) {
    const asked = {
      subjectType: type,
      resourceType: resource.type,
      resourceId: resource.id,
      resourceProperties: resource.properties,
      action,
      context,
    };
    found = await retryRead(() => subjectsThroughConditions(sql, q, asked));
  }
  return pageFrom(found, start, (r) => ({ type, id: r.id }));
}

/**
 * The permission codes the subject holds on the resource type now; one held under a condition where it holds
 * for the resource. Unknown subject or type: no results.
 */
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
  const q = {
    projectId,
    subjectType: type,
    subjectId: id,
    resource: code,
    objectId: usable(resource.id),
    after: start.after,
    limit: start.limit + 1,
  };
  let found = await retryRead(() => searchActions(sql, q));
  if ("pending" in found) {
    const asked = {
      subjectType: subject.type,
      resourceType: resource.type,
      resourceId: resource.id,
      resourceProperties: resource.properties,
      context,
    };
    found = await retryRead(() => actionsThroughConditions(sql, q, asked));
  }
  return pageFrom(found, start, (r) => ({ name: r.name }));
}

/**
 * The objects of the resource type the subject may do the action on: every registered object when it holds
 * the permission project-wide, else those under its live grants (with their descendants), by id; where it
 * holds it only under conditions, the objects they hold on. An unknown subject, type or action, or an inactive
 * subject: no results.
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
  const q = {
    projectId,
    subjectType: type,
    subjectId: id,
    resource: code,
    action: name,
    after: start.after,
    limit: start.limit + 1,
  };
  let found = await retryRead(() => searchResources(sql, q));
  if ("pending" in found) {
    const asked = { subjectType: subject.type, resourceType: resource.type, action, context };
    found = await retryRead(() => resourcesThroughConditions(sql, q, asked));
  }
  return pageFrom(found, start, (r) => ({ type: resource.type, id: r.k }));
}

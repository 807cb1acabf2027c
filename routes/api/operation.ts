/**
 * The one source of an operation: its route object. A guarded operation names its permission (and which
 * project it acts on) as fields of the route; from them come the bearer gate, the `security` entry, the gate's
 * 401/403/404 responses, the "Needs …" sentence and the `x-permission`, `x-permission-scope` (and
 * `x-also-needs`) extensions of the OpenAPI document.
 */
import { createRoute, type RouteConfig, type z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { AppError, type ErrorCode } from "../../domain/shared/errors.ts";
import { PLAIN } from "../../openapi/fields.ts";
import type { AdminPermission } from "../../domain/authz/defaults.ts";
import {
  type AttachedRead,
  authorize,
  invalidToken,
  type Need,
  type ProjectScope,
} from "../../domain/authz/gate.ts";
import type { AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { errorResponses } from "./responses.ts";

type Config = Omit<RouteConfig, "responses" | "middleware" | "security"> & {
  /** The success responses; the error responses are generated from `errors` (and the gate's). */
  responses: RouteConfig["responses"];
  /** The operation's own error codes, in the order a reader meets them. */
  errors?: ErrorCode[];
};

/** An operation anyone may call (its own checks, if any, are in its handler). */
export function publicRoute<const C extends Config>(config: C & { security?: RouteConfig["security"] }) {
  const { errors, ...route } = config;
  return createRoute({
    ...route,
    responses: { ...route.responses, ...(errors ? errorResponses(...errors) : {}) },
  });
}

/**
 * An operation behind the bearer gate. `permission` is the default resource's permission it needs, or `null`
 * when a live token of any project is all it needs. `scope` (default `own`) says which project it acts on.
 * `alsoNeeds` are permissions the operation itself checks the caller covers (domain/authz/coverage.ts), once the
 * request is valid and its target found: they are not the gate's, but they are published with it.
 * `reads` names the read a read-only operation answers with, from its path and query parameters as its own
 * schemas parse them: the gate sends it in its own statement and hands its record to the handler
 * (`c.get("attached")`) once every check has passed, so the operation costs one round trip. The handler still
 * validates the request, and uses the record only when it would have made the same read (domain/authz/gate.ts,
 * `attachedRecord`). A request whose parameters do not parse, or hold a NUL byte, sends none.
 */
export function guardedRoute<const C extends Config>(
  config: C & {
    permission: AdminPermission | null;
    scope?: ProjectScope;
    alsoNeeds?: readonly AdminPermission[];
    reads?: (input: ReadInput) => AttachedRead;
    /**
     * For a POST that only reads (a question, not a change): the read to attach, from the JSON body as sent
     * (unvalidated: null when it is not one the operation would make). The handler validates the body and
     * uses the record only when it would have made that very read, as for `reads`.
     */
    readsBody?: (
      body: unknown,
      principal: { projectId: string; organizationId: string | null },
    ) => AttachedRead | null;
  },
) {
  const { permission, scope = "own", alsoNeeds = [], errors = [], description, reads, readsBody, ...route } =
    config;
  // A read rides in the gate only for a read-only operation that needs a permission: the gate's statement runs it
  // only once that permission is held.
  if (reads && (route.method !== "get" || permission === null)) {
    throw new Error(`${route.operationId}: reads needs a GET operation with a permission`);
  }
  if ((readsBody || scope === "audience") && (route.method !== "post" || permission === null)) {
    throw new Error(`${route.operationId}: the audience scope needs a POST operation with a permission`);
  }
  if (readsBody && scope !== "audience") {
    throw new Error(`${route.operationId}: readsBody needs the audience scope`);
  }
  const need: Need = permission === null ? { permission: null, scope: "token" } : { permission, scope };
  const gateErrors: ErrorCode[] = need.scope === "token"
    ? ["invalid_authorization_token", "insufficient_permission"]
    : need.scope === "system" || need.scope === "audience"
    ? ["invalid_authorization_token", "insufficient_permission"]
    : ["invalid_authorization_token", "insufficient_permission", "project_not_found"];
  const also: { "x-also-needs"?: AdminPermission[] } = alsoNeeds.length > 0
    ? { "x-also-needs": [...alsoNeeds] }
    : {};
  return createRoute({
    ...route,
    description: [needs(need), alsoNeeded(alsoNeeds), description].filter(Boolean).join(" "),
    security: [{ bearerAuth: [] }],
    responses: { ...route.responses, ...errorResponses(...gateErrors, ...errors) },
    middleware: gate(need, reads && readOf(route.request, reads), readsBody),
    "x-permission": permission,
    "x-permission-scope": need.scope,
    ...also,
  });
}

/** The sentence that opens a guarded operation's description. */
function needs(need: Need): string {
  switch (need.scope) {
    case "token":
      return "Needs only a valid token, and no permission; not a token of an exchange (RFC 8693), which acts " +
        "for its subject with permissions, never on its account (403).";
    case "system":
      return `Needs \`${need.permission}\` on a system-project token.`;
    case "own-or-system":
      return `Needs \`${need.permission}\`, on a token of this project or of the system project.`;
    case "own":
      return `Needs \`${need.permission}\`.`;
    case "audience":
      return `Needs \`${need.permission}\` on a token of the project the request is about (its \`aud\`).`;
  }
}

/** The sentence on the permissions the operation checks beyond the gate's. */
function alsoNeeded(codes: readonly AdminPermission[]): string {
  if (codes.length === 0) return "";
  const list = codes.map((c) => `\`${c}\``).join(", ");
  return `Also needs ${list}, checked once the request is valid and its target found: 403 otherwise.`;
}

/** An operation's path and query parameters, parsed by its schemas. */
type ReadInput = { param: Record<string, unknown>; query: Record<string, unknown> };

/** The read to attach for a request, or null when its parameters do not parse (the validator answers 400). */
function readOf(
  request: RouteConfig["request"],
  reads: (input: ReadInput) => AttachedRead,
): (c: Context<AppEnv>) => AttachedRead | null {
  const parse = (schema: unknown, value: unknown): Record<string, unknown> | null => {
    if (schema === undefined) return {};
    const parsed = (schema as z.ZodType).safeParse(value);
    return parsed.success ? parsed.data as Record<string, unknown> : null;
  };
  return (c) => {
    const raw = c.req.param();
    const param = parse(request?.params, raw);
    // As the validator reads a query: a repeated key is an array.
    const queries = Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v]);
    const query = parse(request?.query, Object.fromEntries(queries));
    if (param === null || query === null) return null;
    // The gate checks the path's project as sent; the read must be for that very project.
    if (param.project_id !== raw.project_id) return null;
    const read = reads({ param, query });
    // PostgreSQL refuses a NUL byte in text; such a request reads apart, and gets the answer it would without.
    return read.params.some((p) => typeof p === "string" && p.includes("\0")) ? null : read;
  };
}

/** The bearer-token gate as route middleware: sets `principal`, or answers 401, 404 or 403. */
function gate(
  need: Need,
  reads?: (c: Context<AppEnv>) => AttachedRead | null,
  readsBody?: (
    body: unknown,
    principal: { projectId: string; organizationId: string | null },
  ) => AttachedRead | null,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { sql, tokens } = c.get("deps");
    const token = bearerToken(c.req.header("authorization"));
    // A question whose read rides in the gate (readsBody) has its body read here (not validated) once a token was
    // sent; the validator parses it after the gate, and answers a body that is not JSON.
    const body = readsBody && token !== undefined ? await jsonOf(c) : undefined;
    const { principal, attached } = await authorize(
      sql,
      tokens,
      {
        token,
        pathProjectId: need.scope === "system" || need.scope === "token" || need.scope === "audience"
          ? null
          : pathProjectId(c.req.param("project_id")),
      },
      need,
      reads ? () => reads(c) : readsBody && ((aud) => body === undefined ? null : readsBody(body, aud)),
    );
    c.set("principal", { ...principal, request: requestInfo(c) });
    if (attached) c.set("attached", attached);
    await next();
  };
}

/** How deep a JSON body may nest: deeper ones could only exhaust the stack of whatever walks them. */
export const MAX_DEPTH = 32;

/**
 * 400 `invalid_params` (at the body, `""`) when one of `values` (the free-form parts of a validated body: its
 * `properties` and `context`, which the schemas take as they come) nests objects and arrays deeper than
 * `MAX_DEPTH` levels in the body. Each is walked without recursion, and only as deep as the limit.
 */
export function refuseDeepNesting(values: unknown[], depth: number): void {
  for (const value of values) {
    if (value !== undefined && deeperThan(value, MAX_DEPTH - depth)) {
      throw new AppError("invalid_params", {
        description: `the body nests deeper than ${MAX_DEPTH} levels`,
        details: [{ field: "", issue: `at most ${MAX_DEPTH} levels of nested objects and arrays` }],
      });
    }
  }
}

/** Whether a parsed JSON value nests objects and arrays deeper than `max`; walked without recursion. */
export function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** The body as JSON, or undefined when it is none (the validator then answers 400). */
async function jsonOf(c: Context<AppEnv>): Promise<unknown> {
  try {
    return JSON.parse(await c.req.text());
  } catch {
    return undefined; // not JSON: the validator refuses it
  }
}

/** Reads `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 7235 §2.1). */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!m) throw invalidToken("the Authorization header is not a bearer token");
  return m[1];
}

/** A path project id that cannot name a project (empty, over 100 characters, a control character): 400. */
function pathProjectId(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  // Refused before the gate's statement, which other requests share (db/batch.ts): no project has such an id.
  // The rule of `Id` (openapi/fields.ts), tested without a schema parse: this runs on every gated request.
  if (raw.length === 0 || raw.length > 100 || !PLAIN.test(raw)) {
    throw new AppError("invalid_params", {
      details: [{ field: "project_id", issue: "1 to 100 characters, no control characters" }],
    });
  }
  return raw;
}

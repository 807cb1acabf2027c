/**
 * The edge of the SCIM 2.0 service provider at /scim/v2/{project_id}/: the admin API's bearer gate, or a client's
 * SCIM token (scim:read for reads, scim:write for changes), JSON bodies as `application/scim+json` or `application/json` of at most
 * 1 MiB, answers as `application/scim+json`, and every error in RFC 7644 §3.12's shape. SCIM is its own
 * protocol, served with plain Hono routes apart from the OpenAPI document (docs/provisioning.md).
 */
import type { Context, Handler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { authorize } from "../../../domain/authz/gate.ts";
import { authorizeScimToken, SCIM_TOKEN_PREFIX } from "../../../domain/provisioning/scim_tokens.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import type { Principal } from "../../../domain/shared/principal.ts";
import { ERROR_SCHEMA, ScimError, type ScimType } from "../../../domain/provisioning/scim_errors.ts";
import type { ListParams } from "../../../domain/provisioning/scim_query.ts";
import { PLAIN } from "../../../openapi/fields.ts";
import type { AppEnv } from "../../env.ts";
import { statusOf, toAppError } from "../../errors.ts";
import { requestInfo } from "../../request_info.ts";
import { bearerToken } from "../operation.ts";

export const SCIM_TYPE = "application/scim+json";
const BODY_TYPE = /^application\/(scim\+)?json(\s*;.*)?$/i;
const MAX_BODY = 1024 * 1024;

/** The service provider's base URL for a project (its resources' `location`s start with it). */
export function scimBase(c: Context<AppEnv>, projectId: string): string {
  return `${c.get("deps").config.publicUrl}/scim/v2/${projectId}`;
}

/** What a SCIM handler is given: the caller the gate let in, and the path's project. */
export type ScimCall = {
  c: Context<AppEnv>;
  caller: Principal;
  projectId: string;
  base: string;
  /** The path's resource id (`/Users/{id}`), "" on a path without one. */
  id: string;
};

/**
 * A SCIM operation: the gate (401, 404, 403), then the handler; whatever it throws answers in SCIM's shape.
 * `permission` is `scim:read` or `scim:write`.
 */
export function scimOperation(
  permission: "scim:read" | "scim:write",
  handler: (call: ScimCall) => Promise<Response>,
): Handler<AppEnv> {
  return async (c) => {
    try {
      if (c.req.url.includes("%00") || c.req.url.includes("\0")) {
        throw new ScimError(400, "invalidSyntax", "the URL must not contain a NUL byte");
      }
      const projectId = c.req.param("project_id") ?? "";
      if (projectId.length === 0 || projectId.length > 100 || !PLAIN.test(projectId)) {
        throw new ScimError(404, undefined, "no such project");
      }
      const token = bearerToken(c.req.header("authorization"));
      // A client's SCIM token (scim_tokens.ts), for directories that send one fixed token; else an access token.
      const principal = token?.startsWith(SCIM_TOKEN_PREFIX)
        ? await authorizeScimToken(c.get("deps").sql, token, projectId, permission)
        : (await authorize(
          c.get("deps").sql,
          c.get("deps").tokens,
          { token, pathProjectId: projectId },
          { permission, scope: "own" },
        )).principal;
      const caller = { ...principal, request: requestInfo(c) };
      c.set("principal", caller);
      return await handler({
        c,
        caller,
        projectId,
        base: scimBase(c, projectId),
        id: c.req.param("id") ?? "",
      });
    } catch (err) {
      return scimError(c, err);
    }
  };
}

/** A JSON answer as `application/scim+json`, never cached, with its ETag and Location when it has them. */
export function scimJson(
  c: Context<AppEnv>,
  body: unknown,
  status: ContentfulStatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": `${SCIM_TYPE}; charset=utf-8`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "x-request-id": c.get("requestId"),
      ...headers,
    },
  });
}

/** A request's body: JSON in a SCIM or JSON media type, at most 1 MiB (400 `invalidSyntax`, 413, 415). */
export async function scimBody(c: Context<AppEnv>): Promise<unknown> {
  const type = c.req.header("content-type");
  if (type === undefined || !BODY_TYPE.test(type)) {
    throw new ScimError(415, undefined, `the body must be ${SCIM_TYPE} or application/json`);
  }
  const length = c.req.header("content-length");
  if (length !== undefined && Number(length) > MAX_BODY) throw tooLarge();
  const reader = c.req.raw.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = reader ? await reader.read() : { done: true, value: undefined };
    if (done || value === undefined) break;
    size += value.length;
    if (size > MAX_BODY) {
      await reader!.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ScimError(400, "invalidSyntax", "the body is not UTF-8");
  }
  if (text.includes("\u0000")) throw new ScimError(400, "invalidSyntax", "the body must not contain a NUL");
  try {
    return JSON.parse(text);
  } catch {
    throw new ScimError(400, "invalidSyntax", "the body is not JSON");
  }
}

const tooLarge = () => new ScimError(413, undefined, "the body is larger than 1 MiB");

/** The list parameters of the query (RFC 7644 §3.4.2), each as sent. */
export function listParams(c: Context<AppEnv>): ListParams {
  const q = (name: string) => {
    // Parameter names are case-insensitive, as attribute names are (Entra ID sends `startIndex`, others `startindex`).
    const key = Object.keys(c.req.queries()).find((k) => k.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : c.req.query(key);
  };
  return {
    filter: q("filter"),
    startIndex: q("startIndex"),
    count: q("count"),
    sortBy: q("sortBy"),
    sortOrder: q("sortOrder"),
    attributes: q("attributes"),
    excludedAttributes: q("excludedAttributes"),
  };
}

/** The scimType of an admin API code that has one (the others answer with a status alone). */
const SCIM_TYPES: Partial<Record<string, ScimType>> = {
  invalid_params: "invalidValue",
  user_email_already_used: "uniqueness",
  user_external_id_already_used: "uniqueness",
  organization_name_already_used: "uniqueness",
  member_already_exists: "uniqueness",
  role_not_found: "invalidValue",
};

/** Any error as RFC 7644 §3.12's body: a SCIM error as thrown, an admin API refusal with its status. */
export function scimError(c: Context<AppEnv>, err: unknown): Response {
  const headers: Record<string, string> = {};
  let status: number;
  let scimType: ScimType | undefined;
  let detail: string;
  if (err instanceof ScimError) {
    ({ status, scimType, detail } = err);
  } else {
    const app: AppError = err instanceof AppError ? err : toAppError(err, c, c.get("deps").log);
    status = statusOf(app);
    scimType = SCIM_TYPES[app.code];
    const details = app.details?.map((d) => `${d.field}: ${d.issue}`).join("; ");
    detail = details ? `${app.message} (${details})` : app.message;
    if (app.retryAfter !== undefined) headers["retry-after"] = String(app.retryAfter);
    if (app.code === "invalid_authorization_token") {
      // RFC 6750 §3: a 401 names the scheme; `error` only when a token was sent.
      const sent = c.req.header("authorization") !== undefined;
      const description = app.message.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "");
      headers["www-authenticate"] = sent
        ? `Bearer realm="access-control", error="invalid_token", error_description="${description}"`
        : `Bearer realm="access-control"`;
    }
    if (app.code === "insufficient_permission" && /lacks the permission/.test(app.message)) {
      headers["www-authenticate"] = `Bearer realm="access-control", error="insufficient_scope"`;
    }
  }
  return scimJson(
    c,
    { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail },
    status as ContentfulStatusCode,
    headers,
  );
}

/** Builds the application: middleware, every route, one error handler, the OpenAPI document. */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import postgres from "postgres";
import type { Config } from "../config.ts";
import type { Sql } from "../db/connection.ts";
import { AppError, CONSTRAINT_ERRORS, type ErrorDetail, FOREIGN_KEY_ERRORS } from "../domain/errors.ts";
import {
  type AdminPermission,
  authorize,
  type Need,
  type Principal,
  type ProjectScope,
} from "../domain/gate.ts";
import type { TokenService } from "../domain/tokens.ts";
import { registerAuthorizeRoutes } from "./authorize.ts";
import { registerClientRoutes } from "./clients.ts";
import { registerProjectRoutes } from "./projects.ts";
import { registerResourceRoutes } from "./resources.ts";
import { registerRoleRoutes } from "./roles.ts";
import { registerUserRoutes } from "./users.ts";
import { registerSystemRoutes } from "./system.ts";
import { registerTokenRoutes } from "./tokens.ts";

export type Deps = {
  sql: Sql;
  tokens: TokenService;
  config: Config;
  log: Logger;
};

export type Logger = {
  error(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
};

export type AppEnv = { Variables: { principal: Principal; requestId: string } };
export type App = OpenAPIHono<AppEnv>;

/** The endpoints that take form posts (RFC 6749 §3.2, RFC 7009, RFC 7662); every other body is JSON. */
const FORM_PATHS = new Set(["/api/v1/tokens", "/api/v1/tokens/revoke", "/api/v1/tokens/introspect"]);
const JSON_TYPE = /^application\/json(;\s*[a-zA-Z0-9\-]+=([^;]+))*$/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded(;\s*[a-zA-Z0-9\-]+=([^;]+))*$/i;

export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Access-Control Service",
    version: "1.0.0",
    description: "An OAuth 2.0 authorization server that also manages, per project, the resources, " +
      "permissions, roles, users and machine clients that decide what a token holder may do.\n\n" +
      "Every error has the shape `{ error, error_description, details? }`; `error` is a stable code.",
  },
};

export function createApp(deps: Deps): App {
  const app: App = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new AppError("invalid_params", { details: zodDetails(result.error.issues) });
      }
    },
  });

  app.use("*", async (c, next) => {
    const incoming = c.req.header("x-request-id");
    const id = incoming && /^[\w.\-]{1,64}$/.test(incoming) ? incoming : crypto.randomUUID();
    c.set("requestId", id);
    await next();
    c.header("X-Request-Id", id);
    c.header("X-Content-Type-Options", "nosniff");
  });

  app.use("/api/*", async (c, next) => {
    await next();
    // Responses carry secrets and live authorization state; nothing may cache them.
    c.header("Cache-Control", "no-store");
  });

  app.use(
    "/api/*",
    bodyLimit({
      maxSize: 1024 * 1024,
      onError: () => {
        throw new AppError("invalid_params", {
          status: 413,
          description: "the request body is larger than 1 MiB",
          details: [{ field: "body", issue: "at most 1 MiB" }],
        });
      },
    }),
  );

  app.use("/api/*", async (c, next) => {
    if (["POST", "PUT", "PATCH"].includes(c.req.method)) {
      const form = FORM_PATHS.has(c.req.path);
      const contentType = c.req.header("content-type");
      // The same patterns the validators apply, so that the two layers never disagree.
      const ok = contentType === undefined ? !hasBody(c) : (form ? FORM_TYPE : JSON_TYPE).test(contentType);
      if (!ok) {
        const expected = form ? "application/x-www-form-urlencoded" : "application/json";
        throw new AppError("invalid_params", {
          description: `the body must be ${expected}`,
          details: [{ field: "Content-Type", issue: `must be ${expected}` }],
        });
      }
    }
    await next();
  });

  registerSystemRoutes(app, deps);
  registerAuthorizeRoutes(app, deps);
  registerTokenRoutes(app, deps);
  registerProjectRoutes(app, deps);
  registerResourceRoutes(app, deps);
  registerRoleRoutes(app, deps);
  registerUserRoutes(app, deps);
  registerClientRoutes(app, deps);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "An access token from `POST /api/v1/tokens`. Each operation names the permission it needs.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "basicAuth", {
    type: "http",
    scheme: "basic",
    description: "client_id and client_secret, each form-urlencoded, joined by a colon (RFC 6749 §2.3.1).",
  });

  app.notFound((c) =>
    errorResponse(c, new AppError("not_found", { description: `no endpoint ${c.req.method} ${c.req.path}` }))
  );
  app.onError((err, c) => errorResponse(c, toAppError(err, c, deps.log)));
  return app;
}

/**
 * A route behind the gate: the permission is checked before the request is validated. With a null
 * permission the route needs only a live token, of any project.
 */
export function guarded<R extends object>(
  deps: Deps,
  route: R,
  permission: AdminPermission | null,
  scope: ProjectScope = "own",
) {
  const need: Need = permission === null ? { permission: null, scope: "token" } : { permission, scope };
  return { ...route, middleware: requirePermission(deps, need) };
}

/** The bearer-token gate as route middleware: sets `principal` or answers 401, 404 or 403. */
export function requirePermission(deps: Deps, need: Need): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = await authorize(deps.sql, deps.tokens, {
      authorization: c.req.header("authorization"),
      pathProjectId: need.scope === "system" || need.scope === "token"
        ? null
        : pathProjectId(c.req.param("project_id")),
    }, need);
    c.set("principal", principal);
    await next();
  };
}

/** A path project id that cannot name a project (too long, a NUL byte) looks up as one that does not exist. */
function pathProjectId(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  return raw.length <= 100 && !raw.includes("\0") ? raw : "";
}

function hasBody(c: Context): boolean {
  const length = c.req.header("content-length");
  return (length !== undefined && length !== "0") || c.req.header("transfer-encoding") !== undefined;
}

export function errorResponse(c: Context, err: AppError): Response {
  for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
  c.header("Cache-Control", "no-store");
  return c.json(
    { error: err.code, error_description: err.message, ...(err.details ? { details: err.details } : {}) },
    err.status,
  );
}

type Issue = { path: PropertyKey[]; message: string };

function zodDetails(issues: Issue[]): ErrorDetail[] {
  return issues.map((i) => ({ field: i.path.map(String).join(".") || "body", issue: i.message }));
}

/**
 * SQLSTATEs that mean "the database cannot answer now", not "the request was wrong": connection (08),
 * resources (53), shutdown (57P01-3), cancelled statement (57014), serialization failure and deadlock (40001,
 * 40P01). They answer 503 with Retry-After.
 */
const UNAVAILABLE = /^(08|53|57P0[1-3]|57014|40001|40P01)/;

function toAppError(err: unknown, c: Context<AppEnv>, log: Logger): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof HTTPException && err.status >= 400 && err.status < 500) {
    // The framework's own refusals: malformed JSON or form bodies (400), media types (415), size (413).
    if (err.status === 413) return new AppError("invalid_params", { status: 413 });
    const field = err.status === 415 ? "Content-Type" : "body";
    return new AppError("invalid_params", { details: [{ field, issue: err.message }] });
  }
  if (err instanceof postgres.PostgresError) {
    // A race the database decided: a unique or foreign-key constraint, named after what it protects.
    const table = err.code === "23505" ? CONSTRAINT_ERRORS : err.code === "23503" ? FOREIGN_KEY_ERRORS : {};
    const mapped = err.constraint_name ? table[err.constraint_name] : undefined;
    if (mapped) return new AppError(mapped);
    // Class 22, data exceptions: a value the database cannot take (a NUL byte in text, say) is bad input.
    if (err.code.startsWith("22")) {
      return new AppError("invalid_params", {
        details: [{ field: "request", issue: "contains a value that cannot be stored (a NUL byte, say)" }],
      });
    }
    if (UNAVAILABLE.test(err.code)) return unavailable(err, c, log);
  } else if (isConnectionError(err)) {
    return unavailable(err, c, log);
  }
  log.error("unexpected error", {
    request_id: c.get("requestId"),
    error: String((err as Error)?.stack ?? err),
  });
  return new AppError("system_error");
}

function unavailable(err: unknown, c: Context<AppEnv>, log: Logger): AppError {
  log.error("database unavailable", { request_id: c.get("requestId"), error: String(err) });
  return new AppError("system_error", {
    status: 503,
    description: "the service cannot reach its database; retry later",
    headers: { "Retry-After": "1" },
  });
}

function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" &&
    [
      "CONNECT_TIMEOUT",
      "CONNECTION_CLOSED",
      "CONNECTION_ENDED",
      "CONNECTION_DESTROYED",
      "ECONNREFUSED",
      "ECONNRESET",
      "ENOENT",
      "EPIPE",
    ]
      .includes(code);
}

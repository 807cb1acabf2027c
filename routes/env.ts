/** What every route handler is given: the service's dependencies, and per request the caller and its id. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import type { Sql } from "../domain/shared/database.ts";
import type { Principal } from "../domain/shared/principal.ts";
import type { Attached } from "../domain/authz/gate.ts";
import type { PresentedClient } from "../domain/oauth/client_auth.ts";
import type { KeySettings } from "../domain/keys/keys.ts";
import type { TokenService } from "../domain/keys/tokens.ts";
import type { Jobs } from "../domain/system/jobs.ts";
import type { Span } from "../telemetry/trace.ts";

export type Deps = {
  sql: Sql;
  tokens: TokenService;
  /** The signing keys' settings, for the operator API. */
  keys: KeySettings;
  config: Config;
  log: Logger;
  /** The background jobs' runs in this instance (readiness); absent where the app is built without running. */
  jobs?: Pick<Jobs, "states" | "startedAt">;
};

export type AppEnv = {
  Variables: {
    /** Set for every request by the app, so that route objects (and their gate) need no wiring. */
    deps: Deps;
    /** Set by the gate on guarded operations. */
    principal: Principal;
    /** Set by the gate when the operation's read rode in its statement (routes/api/operation.ts, `reads`). */
    attached?: Attached;
    requestId: string;
    /** The request's trace span, when tracing is on. */
    span?: Span;
    /** Set by the form endpoints: the client the request presents, authenticated or not (for the request log). */
    client?: PresentedClient;
    /** Set by a page that refuses for a reason the request log should carry (`RequestLine.reason`). */
    reason?: string;
  };
};

export type App = OpenAPIHono<AppEnv>;

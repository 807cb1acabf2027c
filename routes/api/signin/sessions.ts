/** Login sessions: a user's, for admins (`…/users/{user_id}/sessions`), and the current user's own. */
import {
  listCurrentSessions,
  listSessions,
  revokeAllSessions,
  revokeCurrentSession,
  revokeSession,
} from "../../../domain/signin/sessions.ts";
import {
  CurrentSessionParams,
  SessionList,
  SessionListQuery,
  UserSessionParams,
} from "../../../openapi/sessions.ts";
import { UserIdParam } from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";

const WHAT = "A session is one login through one client (its refresh-token family): `id` (the `sid` of its " +
  "access tokens), `client_id`, `created_at`, `last_used_at` (the last refresh), and the browser's `ip` and " +
  "`user_agent` at the login.";

export const listUserSessionsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}/sessions",
  operationId: "listUserSessions",
  tags: ["Sessions"],
  summary: "List a user's live sessions",
  permission: "users:read",
  description: `${WHAT} Newest first.`,
  request: { params: UserIdParam, query: SessionListQuery },
  responses: { 200: jsonResponse(SessionList, "A page of live sessions") },
  errors: ["user_not_found"],
});

export const revokeUserSessionRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/sessions/{session_id}",
  operationId: "revokeUserSession",
  tags: ["Sessions"],
  summary: "End one of a user's sessions",
  permission: "users:update",
  description: "Its refresh token is revoked and its access tokens are refused from their next request. " +
    "The caller must hold every permission the user holds, as for other changes of a user (403 " +
    "`insufficient_permission` otherwise).",
  request: { params: UserSessionParams },
  responses: { 204: { description: "Ended" } },
  errors: ["user_not_found", "session_not_found"],
});

export const revokeUserSessionsRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/sessions",
  operationId: "revokeUserSessions",
  tags: ["Sessions"],
  summary: "Sign a user out everywhere",
  permission: "users:update",
  description: "Ends every login session and every single sign-on browser session of the user. The caller " +
    "must hold every permission the user holds (403 `insufficient_permission` otherwise).",
  request: { params: UserIdParam },
  responses: { 204: { description: "Every session ended" } },
  errors: ["user_not_found"],
});

export const listCurrentUserSessionsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/users/current/sessions",
  operationId: "listCurrentUserSessions",
  tags: ["Sessions"],
  summary: "List the current user's live sessions",
  permission: null,
  description: `A user's token. ${WHAT}`,
  request: { query: SessionListQuery },
  responses: { 200: jsonResponse(SessionList, "A page of live sessions") },
  errors: ["user_not_found"],
});

export const revokeCurrentUserSessionRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/users/current/sessions/{session_id}",
  operationId: "revokeCurrentUserSession",
  tags: ["Sessions"],
  summary: "End one of the current user's sessions",
  permission: null,
  description: "A user's token; the session may be this token's own.",
  request: { params: CurrentSessionParams },
  responses: { 204: { description: "Ended" } },
  errors: ["user_not_found", "session_not_found"],
});

export function registerSessionRoutes(app: App) {
  app.openapi(listCurrentUserSessionsRoute, async (c) => {
    return c.json(
      await listCurrentSessions(c.get("deps").sql, c.get("principal"), c.req.valid("query")),
      200,
    );
  });
  app.openapi(revokeCurrentUserSessionRoute, async (c) => {
    await revokeCurrentSession(c.get("deps").sql, c.get("principal"), c.req.valid("param").session_id);
    return c.body(null, 204) as never;
  });
  app.openapi(listUserSessionsRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(await listSessions(c.get("deps").sql, project_id, user_id, c.req.valid("query")), 200);
  });
  app.openapi(revokeUserSessionRoute, async (c) => {
    const { project_id, user_id, session_id } = c.req.valid("param");
    await revokeSession(c.get("deps").sql, c.get("principal"), project_id, user_id, session_id);
    return c.body(null, 204) as never;
  });
  app.openapi(revokeUserSessionsRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    await revokeAllSessions(c.get("deps").sql, c.get("principal"), project_id, user_id);
    return c.body(null, 204) as never;
  });
}

/** Login sessions (a refresh-token family, from one login through one client) as users and admins see them. */
import { z } from "@hono/zod-openapi";
import { Id, listOf, listQuery } from "./fields.ts";
import { UserIdParam } from "./users.ts";

const time = (description: string) => z.string().openapi({ format: "date-time", description });

export const Session = z.object({
  id: z.string().openapi({ description: "The session id (the `sid` of its access tokens)" }),
  client_id: z.string().openapi({ description: "The client the user signed in to" }),
  created_at: time("When the user signed in (RFC 3339, UTC)"),
  last_used_at: time("The last refresh, or the login (RFC 3339, UTC)"),
  ip: z.string().nullable().openapi({ description: "The browser's address at the login" }),
  user_agent: z.string().nullable().openapi({ description: "The browser's user agent at the login" }),
}).openapi("Session");
export type Session = z.infer<typeof Session>;

export const SessionList = listOf(Session, "SessionList");

export const SessionListQuery = listQuery(["created_at"] as const).pick({ page_num: true, page_size: true });
export type SessionListQuery = z.infer<typeof SessionListQuery>;

export const UserSessionParams = UserIdParam.extend({
  session_id: Id.openapi({ param: { name: "session_id", in: "path" } }),
});

export const CurrentSessionParams = z.object({
  session_id: Id.openapi({ param: { name: "session_id", in: "path" } }),
});

/** Admin operations that mail a user a link: password reset, invitation, email verification. */
import { mailUser } from "../../../domain/accounts/users.ts";
import { MailSent, UserIdParam } from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";
import { linkSettings } from "../../settings.ts";

const COVER = "Like changing the user's password or email, it needs every permission the user holds (403 " +
  "`insufficient_permission` otherwise). The mail is written to the outbox in the same transaction as the " +
  "link and its audit event, and sent with retries (see docs/email.md). A user without an email, or inactive, " +
  "is `invalid_params` on `user_id`.";

export const sendPasswordResetRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users/{user_id}/password-reset",
  operationId: "sendPasswordReset",
  tags: ["Users"],
  summary: "Mail the user a password reset link",
  permission: "users:update",
  description: "The link works once, for PASSWORD_RESET_TTL (30 minutes), and replaces any earlier one; " +
    "setting the new password ends every session of the user and verifies the address. `password_reset" +
    ".requested` is recorded. " + COVER,
  request: { params: UserIdParam },
  responses: { 202: jsonResponse(MailSent, "The mail is queued") },
  errors: ["invalid_params", "user_not_found"],
});

export const sendInvitationRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users/{user_id}/invitation",
  operationId: "sendInvitation",
  tags: ["Users"],
  summary: "Mail the user an invitation again",
  permission: "users:update",
  description: "For a user without a password (created with `send_invitation: true`, say): a new link to " +
    "choose one, for INVITATION_TTL (7 days); earlier links stop working. A user with a password is " +
    "`invalid_params`: send a password reset instead. `invitation.sent` is recorded. " + COVER,
  request: { params: UserIdParam },
  responses: { 202: jsonResponse(MailSent, "The mail is queued") },
  errors: ["invalid_params", "user_not_found"],
});

export const sendVerificationRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users/{user_id}/verification",
  operationId: "sendVerification",
  tags: ["Users"],
  summary: "Mail the user a link that verifies their address",
  permission: "users:update",
  description:
    "To `pending_email` when a new address waits, else to `email`. Following the link sets `email_verified` " +
    "(and makes a waiting address the user's `email`). It works once, for EMAIL_VERIFICATION_TTL (1 day); " +
    "earlier links stop working. A verified address with none waiting is `invalid_params`. " +
    "`email.verification_sent` is recorded. " + COVER,
  request: { params: UserIdParam },
  responses: { 202: jsonResponse(MailSent, "The mail is queued") },
  errors: ["invalid_params", "user_not_found"],
});

export function registerUserMailRoutes(app: App) {
  const routes = [
    [sendPasswordResetRoute, "password_reset"],
    [sendInvitationRoute, "invitation"],
    [sendVerificationRoute, "email_verification"],
  ] as const;
  for (const [route, purpose] of routes) {
    app.openapi(route, async (c) => {
      const { project_id, user_id } = c.req.valid("param");
      const sent = await mailUser(
        c.get("deps").sql,
        c.get("principal"),
        project_id,
        user_id,
        purpose,
        linkSettings(c),
      );
      return c.json(sent, 202);
    });
  }
}

/**
 * The current user's second factors: `/api/v1/users/current/second-factors`, the authenticator's enrolment
 * (`…/totp`, `…/totp/confirm`) and recovery codes. What the account page does, for applications with pages of
 * their own.
 */
import {
  confirmTotpEnrolment,
  factorsOf,
  regenerateRecoveryCodes,
  removeCurrentTotp,
  removeUserTotp,
  startTotpEnrolment,
  userFactors,
} from "../../../domain/factors/mfa.ts";
import { tokenActor } from "../../../domain/factors/proof.ts";
import { UserIdParam } from "../../../openapi/users.ts";
import { removeUserPasskey } from "../../../domain/factors/passkeys.ts";
import { z } from "@hono/zod-openapi";
import {
  ConfirmTotpRequest,
  CurrentPasswordRequest,
  RecoveryCodes,
  SecondFactors,
  TotpEnrolment,
} from "../../../openapi/mfa.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";
import { mfaSettings } from "../../settings.ts";

const PASSWORD =
  "Needs fresh proof: `current_password` when the user has a password (400 `invalid_params` on " +
  "it when missing or wrong; wrong ones are throttled like logins, 429); for a user without one, `code`: the " +
  "current code of their authenticator or a recovery code (spent then). An access token alone never changes " +
  "factors: 403 `reauthentication_required` (a user without a password and without a factor signs in again " +
  "at their provider on the account page, `/account`, to add the first). The user is mailed a notice of the " +
  "change.";

export const getCurrentSecondFactorsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/users/current/second-factors",
  operationId: "getCurrentSecondFactors",
  tags: ["SecondFactors"],
  summary: "The current user's second factors",
  permission: null,
  description: "A user's token: whether an authenticator is enrolled, and how many recovery codes are left.",
  responses: { 200: jsonResponse(SecondFactors, "The user's second factors") },
  errors: ["user_not_found"],
});

export const startTotpEnrolmentRoute = guardedRoute({
  method: "post",
  path: "/api/v1/users/current/totp",
  operationId: "startTotpEnrolment",
  tags: ["SecondFactors"],
  summary: "Start enrolling an authenticator app",
  permission: null,
  description:
    "A new TOTP key (RFC 6238: SHA-1, 6 digits, 30 s) and its `otpauth://` URI for a QR code. It asks " +
    "for nothing at sign-in until confirmed with `POST /api/v1/users/current/totp/confirm`; starting again " +
    "replaces a key not yet confirmed. A user with an authenticator already: 409 `totp_already_enrolled`. " +
    PASSWORD,
  request: { body: jsonBody(CurrentPasswordRequest) },
  responses: { 200: jsonResponse(TotpEnrolment, "The key, shown now only") },
  errors: [
    "invalid_params",
    "reauthentication_required",
    "user_not_found",
    "totp_already_enrolled",
    "too_many_requests",
  ],
});

export const confirmTotpEnrolmentRoute = guardedRoute({
  method: "post",
  path: "/api/v1/users/current/totp/confirm",
  operationId: "confirmTotpEnrolment",
  tags: ["SecondFactors"],
  summary: "Confirm the authenticator with its current code",
  permission: null,
  description:
    "A code of the new key (within one 30-second step either side) completes the enrolment: from " +
    "now on a sign-in asks for a code after the password. Answers ten recovery codes, once. A wrong code: " +
    "400 `invalid_params` on `code`.",
  request: { body: jsonBody(ConfirmTotpRequest) },
  responses: { 200: jsonResponse(RecoveryCodes, "The recovery codes, shown now only") },
  errors: ["invalid_params", "user_not_found", "totp_enrolment_not_found", "totp_already_enrolled"],
});

export const removeCurrentTotpRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/users/current/totp",
  operationId: "removeCurrentTotp",
  tags: ["SecondFactors"],
  summary: "Remove the authenticator",
  permission: null,
  description: "Removes the authenticator and the recovery codes. In a project whose `mfa` policy is " +
    "`required` it is the user's last factor: 409 `second_factor_required` (the user's row is locked while " +
    "that is checked: of two removals at once, at most one passes). " + PASSWORD,
  request: { body: jsonBody(CurrentPasswordRequest) },
  responses: { 204: { description: "Removed" } },
  errors: [
    "invalid_params",
    "reauthentication_required",
    "user_not_found",
    "second_factor_not_found",
    "second_factor_required",
    "too_many_requests",
  ],
});

export const regenerateRecoveryCodesRoute = guardedRoute({
  method: "post",
  path: "/api/v1/users/current/recovery-codes",
  operationId: "regenerateRecoveryCodes",
  tags: ["SecondFactors"],
  summary: "Replace the recovery codes",
  permission: null,
  description: `Ten new recovery codes; the old ones, spent or not, stop working. ${PASSWORD}`,
  request: { body: jsonBody(CurrentPasswordRequest) },
  responses: { 200: jsonResponse(RecoveryCodes, "The new codes, shown now only") },
  errors: [
    "invalid_params",
    "reauthentication_required",
    "user_not_found",
    "second_factor_not_found",
    "too_many_requests",
  ],
});

export const getUserSecondFactorsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}/second-factors",
  operationId: "getUserSecondFactors",
  tags: ["SecondFactors"],
  summary: "A user's second factors",
  permission: "users:read",
  description: "Whether the user has an authenticator, since when, and how many recovery codes are left " +
    "(never the key or the codes).",
  request: { params: UserIdParam },
  responses: { 200: jsonResponse(SecondFactors, "The user's second factors") },
  errors: ["user_not_found"],
});

export const removeUserTotpRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/second-factors/totp",
  operationId: "removeUserTotp",
  tags: ["SecondFactors"],
  summary: "Remove a user's authenticator",
  permission: "users:update",
  description: "For a user who lost their phone: removes the authenticator and the recovery codes " +
    "(`mfa.removed`). The caller must hold every permission the user holds, as for other changes of a user " +
    "(403 `insufficient_permission` otherwise). In a project whose `mfa` is `required`, the user enrols a new " +
    "one at their next sign-in. Deactivating a user or setting their password leaves their factors. The user " +
    "is mailed a notice.",
  request: { params: UserIdParam },
  responses: { 204: { description: "Removed" } },
  errors: ["user_not_found", "second_factor_not_found"],
});

export const removeUserPasskeyRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}/second-factors/passkeys/{credential_id}",
  operationId: "removeUserPasskey",
  tags: ["SecondFactors"],
  summary: "Remove one of a user's passkeys",
  permission: "users:update",
  description:
    "For a lost or stolen device: the passkey (its `id` in the user's second factors) no longer signs " +
    "in (`passkey.removed`). The caller must hold every permission the user holds (403 " +
    "`insufficient_permission` otherwise). The user is mailed a notice.",
  request: {
    params: UserIdParam.extend({
      credential_id: z.string().min(1).max(1400).openapi({ param: { name: "credential_id", in: "path" } }),
    }),
  },
  responses: { 204: { description: "Removed" } },
  errors: ["user_not_found", "second_factor_not_found"],
});

export function registerMfaRoutes(app: App) {
  app.openapi(removeUserPasskeyRoute, async (c) => {
    const { project_id, user_id, credential_id } = c.req.valid("param");
    await removeUserPasskey(
      c.get("deps").sql,
      mfaSettings(c),
      c.get("principal"),
      project_id,
      user_id,
      credential_id,
    );
    return c.body(null, 204) as never;
  });
  app.openapi(getUserSecondFactorsRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(await userFactors(c.get("deps").sql, project_id, user_id), 200);
  });
  app.openapi(removeUserTotpRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    await removeUserTotp(c.get("deps").sql, mfaSettings(c), c.get("principal"), project_id, user_id);
    return c.body(null, 204) as never;
  });
  app.openapi(getCurrentSecondFactorsRoute, async (c) => {
    return c.json(await factorsOf(c.get("deps").sql, tokenActor(c.get("principal"))), 200);
  });
  app.openapi(startTotpEnrolmentRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(
      await startTotpEnrolment(c.get("deps").sql, mfaSettings(c), tokenActor(c.get("principal")), body),
      200,
    );
  });
  app.openapi(confirmTotpEnrolmentRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(
      await confirmTotpEnrolment(c.get("deps").sql, mfaSettings(c), tokenActor(c.get("principal")), body),
      200,
    );
  });
  app.openapi(removeCurrentTotpRoute, async (c) => {
    await removeCurrentTotp(
      c.get("deps").sql,
      mfaSettings(c),
      tokenActor(c.get("principal")),
      c.req.valid("json"),
    );
    return c.body(null, 204) as never;
  });
  app.openapi(regenerateRecoveryCodesRoute, async (c) => {
    return c.json(
      await regenerateRecoveryCodes(
        c.get("deps").sql,
        mfaSettings(c),
        tokenActor(c.get("principal")),
        c.req.valid("json"),
      ),
      200,
    );
  });
}

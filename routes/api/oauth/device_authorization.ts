/** The device authorization endpoint (RFC 8628 §3.1), form-encoded like the token endpoint. */
import { authorizeDevice } from "../../../domain/oauth/device_authorization.ts";
import { DeviceAuthorizationRequest, DeviceAuthorizationResponse } from "../../../openapi/tokens.ts";
import { presentedClientOf } from "./client_auth.ts";
import { FORM_ENDPOINTS } from "../../form_endpoints.ts";
import type { App } from "../../env.ts";
import { publicRoute } from "../operation.ts";
import { formBody, jsonResponse, oauthErrorResponses } from "../responses.ts";

export const authorizeDeviceRoute = publicRoute({
  method: "post",
  path: FORM_ENDPOINTS.deviceAuthorization,
  operationId: "authorizeDevice",
  tags: ["Tokens"],
  summary: "Start a device authorization (RFC 8628)",
  description: "For a device without a browser, or where typing is hard (a CLI, a TV): a client whose " +
    "`device_grant` is true authenticates as at the token endpoint (`client_id` for a public client, HTTP Basic " +
    "for a confidential one) and gets a `device_code` (a secret it keeps) and a `user_code` (`XXXX-XXXX`) that its " +
    "user enters at `verification_uri` (`/device` of this service; `verification_uri_complete` carries the code). " +
    "The user signs in there as at `/authorize` (the project's policies, second factor, passkeys, providers and " +
    "consent apply) and approves or denies the device. Meanwhile the device polls the token endpoint every " +
    "`interval` seconds with `grant_type=urn:ietf:params:oauth:grant-type:device_code` and its `device_code`. " +
    "`scope` and `resource` are those of an authorization request (`openid` for an ID token; RFC 8707 for one " +
    "API). Refusals: `unauthorized_client` when the client's `device_grant` is false, `invalid_target` for a " +
    "resource the project has not; the client errors of the token endpoint. Answers carry " +
    "`Cache-Control: no-store`.",
  security: [{ basicAuth: [] }],
  request: { body: formBody(DeviceAuthorizationRequest) },
  responses: {
    200: jsonResponse(DeviceAuthorizationResponse, "The device and user codes"),
    ...oauthErrorResponses([
      "invalid_params",
      "invalid_client",
      "invalid_client_credentials",
      "client_not_active",
      "project_not_active",
      "unauthorized_client",
      "invalid_target",
      "too_many_requests",
      "system_error",
    ]),
  },
});

export function registerDeviceAuthorizationRoute(app: App) {
  app.openapi(authorizeDeviceRoute, async (c) => {
    const { sql, config } = c.get("deps");
    const form = c.req.valid("form");
    const client = presentedClientOf(c, form);
    const body = await authorizeDevice(sql, form, client, config.publicUrl);
    c.header("Pragma", "no-cache");
    return c.json(body, 200);
  });
}

/** Composes the application: middleware, every area's routes, the error handler, the OpenAPI document. */
import project from "../deno.json" with { type: "json" };
import { OpenAPIHono } from "@hono/zod-openapi";
import { AppError } from "../domain/shared/errors.ts";
import { registerAuthorizeRoutes } from "./pages/authorize.ts";
import { registerConsentRoutes } from "./pages/consent.ts";
import { registerAuthzenRoutes } from "./api/authz/authzen.ts";
import { registerAuditRoutes } from "./api/audit/audit.ts";
import { registerClientRoutes } from "./api/oauth/clients.ts";
import { registerConsoleRoutes } from "./console/console.tsx";
import { registerDocsRoutes } from "./docs.ts";
import { registerFederationRoutes } from "./pages/federation.ts";
import { registerSecondFactorRoutes } from "./pages/second_step.ts";
import { registerAccountRoutes } from "./pages/account.ts";
import { registerPasskeyRoutes } from "./pages/passkeys.ts";
import { registerIdentityProviderRoutes } from "./api/federation/identity_providers.ts";
import { registerHomeRoutes } from "./pages/home.tsx";
import { registerKeyRoutes } from "./api/keys/keys.ts";
import { registerGrantRoutes } from "./api/authz/grants.ts";
import { registerObjectRoutes } from "./api/authz/objects.ts";
import { registerLogoutRoutes } from "./pages/logout.ts";
import { registerMetricsRoute } from "./api/system/metrics.ts";
import { registerOidcRoutes } from "./api/oauth/oidc.ts";
import { registerSessionRoutes } from "./api/signin/sessions.ts";
import { registerConsentApiRoutes } from "./api/signin/consents.ts";
import { registerMfaRoutes } from "./api/factors/mfa.ts";
import type { App, AppEnv, Deps } from "./env.ts";
import { errorResponse, toAppError, zodDetails } from "./errors.ts";
import { apiEdge, requestContext } from "./middleware.ts";
import { registerProjectRoutes } from "./api/projects/projects.ts";
import { registerBrandingRoutes } from "./api/projects/branding.ts";
import { registerResourceRoutes } from "./api/authz/resources.ts";
import { registerRoleRoutes } from "./api/authz/roles.ts";
import { PROTECTED_RESOURCE_PATH, registerSystemRoutes } from "./api/system/system.ts";
import { registerTokenRoutes } from "./api/oauth/tokens.ts";
import { registerDeviceAuthorizationRoute } from "./api/oauth/device_authorization.ts";
import { registerDevicePages } from "./pages/device.ts";
import { registerUserRoutes } from "./api/accounts/users.ts";
import { registerUserMailRoutes } from "./api/accounts/user_mail.ts";
import { registerUserImportRoutes } from "./api/provisioning/users_import.ts";
import { registerScimTokenRoutes } from "./api/provisioning/scim_tokens.ts";
import { registerUserExportRoutes } from "./api/provisioning/users_export.ts";
import { registerAccountPages } from "./pages/mail_links.ts";
import { registerSignupPages } from "./pages/signup.ts";
import { registerInvitationPages } from "./pages/invitations.ts";
import { registerWebhookRoutes } from "./api/events/webhooks.ts";
import { registerOrganizationRoutes } from "./api/organizations/organizations.ts";
import { registerMemberRoutes } from "./api/organizations/members.ts";
import { registerInvitationRoutes } from "./api/organizations/invitations.ts";
import { registerScimResourceRoutes } from "./api/provisioning/scim_resources.ts";
import { registerScimDiscoveryRoutes, registerScimNotFound } from "./api/provisioning/scim_discovery.ts";

export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Access-Control Service",
    version: project.version,
    description: "An OAuth 2.0 authorization server that also manages, per project, the resources, " +
      "permissions, roles, users and machine clients that decide what a token holder may do.\n\n" +
      "Every error has the shape `{ error, error_description, details? }`; `error` is a stable code. The token, " +
      "revocation and introspection endpoints answer the RFC 6749 §5.2 code in `error` (`invalid_request`, " +
      "`invalid_client`, `invalid_grant`, `unsupported_grant_type`, …) and the stable code in `error_code`.",
  },
};

/**
 * The document's head for a service at this public URL: `servers` names it, so that the examples of /docs
 * have a host. The served /openapi.json uses PUBLIC_URL; openapi/openapi.json, written without a running
 * service, the default (http://localhost:8000), so that the file stays the same wherever it is generated.
 */
export function openApiHead(publicUrl: string) {
  return { ...OPENAPI_INFO, servers: [{ url: publicUrl }] };
}

export function createApp(deps: Deps): App {
  const app: App = new OpenAPIHono<AppEnv>({
    // One hook for every validation failure: `invalid_params` with a detail per field.
    defaultHook: (result) => {
      if (!result.success) throw new AppError("invalid_params", { details: zodDetails(result.error.issues) });
    },
  });

  app.use("*", requestContext(deps));
  app.use("/api/*", apiEdge);
  app.use("/access/*", apiEdge);

  registerSystemRoutes(app);
  registerMetricsRoute(app, deps.config.metricsToken);
  registerHomeRoutes(app);
  registerDocsRoutes(app);
  registerAuthorizeRoutes(app);
  registerConsentRoutes(app);
  registerDevicePages(app);
  registerFederationRoutes(app);
  registerAccountPages(app);
  registerSignupPages(app);
  registerInvitationPages(app);
  registerSecondFactorRoutes(app);
  registerPasskeyRoutes(app);
  registerAccountRoutes(app);
  registerOidcRoutes(app);
  registerLogoutRoutes(app);
  registerTokenRoutes(app);
  registerDeviceAuthorizationRoute(app);
  registerProjectRoutes(app);
  registerBrandingRoutes(app);
  registerResourceRoutes(app);
  registerRoleRoutes(app);
  registerObjectRoutes(app);
  registerGrantRoutes(app);
  registerSessionRoutes(app);
  registerConsentApiRoutes(app);
  registerMfaRoutes(app);
  registerUserImportRoutes(app);
  registerScimTokenRoutes(app);
  // Before the user routes: `…/users/export` would otherwise be read as a user id.
  registerUserExportRoutes(app);
  registerUserRoutes(app);
  registerUserMailRoutes(app);
  registerOrganizationRoutes(app);
  registerMemberRoutes(app);
  registerInvitationRoutes(app);
  registerClientRoutes(app);
  registerKeyRoutes(app);
  registerAuditRoutes(app);
  registerWebhookRoutes(app);
  registerIdentityProviderRoutes(app);
  registerAuthzenRoutes(app);
  registerConsoleRoutes(app);
  // SCIM 2.0 (docs/provisioning.md): its own protocol, with plain routes outside the OpenAPI document.
  registerScimDiscoveryRoutes(app);
  registerScimResourceRoutes(app);
  registerScimNotFound(app);

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
  app.doc31("/openapi.json", openApiHead(deps.config.publicUrl));

  app.notFound((c) =>
    errorResponse(c, new AppError("not_found", { description: `no endpoint ${c.req.method} ${c.req.path}` }))
  );
  const resourceMetadata = `${deps.config.publicUrl}${PROTECTED_RESOURCE_PATH}`;
  app.onError((err, c) => errorResponse(c, toAppError(err, c, deps.log), resourceMetadata));
  return app;
}

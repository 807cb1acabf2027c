/**
 * The endpoints that take form posts (RFC 6749 §3.2, RFC 7009, RFC 7662, RFC 8628 §3.1); every other body is JSON. Their
 * paths, for the routes (routes/api/oauth/tokens.ts), the body rules (routes/middleware.ts) and the OAuth error shape
 * they answer with (routes/errors.ts).
 */
export const FORM_ENDPOINTS = {
  token: "/api/v1/tokens",
  revocation: "/api/v1/tokens/revoke",
  introspection: "/api/v1/tokens/introspect",
  deviceAuthorization: "/api/v1/tokens/device_authorization",
} as const;

const FORM_PATHS = new Set<string>(Object.values(FORM_ENDPOINTS));

/** Whether a path is one of the form endpoints. */
export const isFormEndpoint = (path: string) => FORM_PATHS.has(path);

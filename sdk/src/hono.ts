/**
 * protectedResource: createProtectedResource as a Hono middleware (`@access-control/sdk/hono`). Typed by the
 * few members of Hono's Context it uses, so the SDK does not depend on Hono (nor pin its version for you).
 */
import type { AccessTokenClaims, ProtectedResource } from "./resource_server.ts";

/** The variables the middleware sets: `new Hono<{ Variables: ProtectedResourceVariables }>()`. */
export type ProtectedResourceVariables = { accessToken: AccessTokenClaims };

/** The part of Hono's Context the middleware uses. */
export interface ContextLike {
  req: { raw: Request };
  // A method, not a property: its parameters are then compared both ways, as Hono's own overloads need.
  set(key: "accessToken", value: AccessTokenClaims): void;
}

/**
 * Answers the resource's metadata (RFC 9728) on its well-known paths, without a token, and for every other
 * request checks the bearer token and its `scopes`: a refusal is answered here, a valid token's claims are
 * `c.get("accessToken")` for the handlers. Mount it where it sees the well-known paths too
 * (`app.use("*", …)`), or serve them apart with `api.handleMetadata(c.req.raw)`.
 */
export function protectedResource(
  api: ProtectedResource,
  options: { scopes?: string[] } = {},
): (c: ContextLike, next: () => Promise<void>) => Promise<Response | void> {
  return async (c, next) => {
    const metadata = api.handleMetadata(c.req.raw);
    if (metadata) return metadata;
    const outcome = await api.authenticate(c.req.raw, options);
    if (!outcome.ok) return outcome.response;
    c.set("accessToken", outcome.claims);
    await next();
  };
}

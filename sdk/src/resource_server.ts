/**
 * createProtectedResource: what an API (an MCP server, say) needs to accept the access tokens this service
 * issues for it. It publishes the API's OAuth 2.0 Protected Resource Metadata (RFC 9728), so that a client
 * that knows only the API's address finds the authorization server, and it checks a request's bearer token
 * offline (an RFC 9068 JWT access token, verified with `jose` against the service's published keys),
 * answering the RFC 6750 challenge a client can act on when the token is missing, invalid or lacks a scope.
 */
import { createRemoteJWKSet, customFetch, errors, type JWTPayload, jwtVerify } from "jose";
import type { AccessAction, AccessClient, AccessContext, AccessDecision, AccessResource } from "./access.ts";

export type ProtectedResourceOptions = {
  /** The service's issuer, its `PUBLIC_URL` (e.g. `https://auth.example.com`): tokens' `iss` must be this. */
  issuer: string;
  /** The API's resource indicator (RFC 8707), e.g. `https://mcp.example.com/mcp`; tokens' `aud` names it. */
  resource: string;
  /** The API's permission codes, published as `scopes_supported`. */
  scopesSupported?: string[];
  /** A name for people, published as `resource_name`. */
  resourceName?: string;
  /** Where the service publishes its keys; `<issuer>/.well-known/jwks.json` by default. */
  jwksUri?: string;
  /** The signature algorithms accepted; by default the three the service can sign with. */
  algorithms?: string[];
  /** The fetch that loads the keys; the platform's by default. */
  fetch?: typeof fetch;
  /** An AuthZEN client (createAccessClient, with a token holding `access:evaluate`), for `decide`. */
  access?: AccessClient;
};

/** The claims of a verified access token (RFC 9068). */
export type AccessTokenClaims = JWTPayload & {
  iss: string;
  aud: string | string[];
  /** The user's id, or the client's id when the token came from the client-credentials grant. */
  sub: string;
  client_id: string;
  /** The granted permission codes of this resource, separated by spaces. */
  scope?: string;
  jti: string;
  iat: number;
  exp: number;
  /** The user's login session, on user tokens. */
  sid?: string;
};

/** The RFC 9728 §2 metadata document. */
export type ProtectedResourceMetadata = {
  resource: string;
  authorization_servers: string[];
  scopes_supported?: string[];
  bearer_methods_supported: string[];
  resource_name?: string;
};

export type Authentication =
  | { ok: true; claims: AccessTokenClaims }
  /** `response` is the answer to send: 400, 401 or 403 with its `WWW-Authenticate` challenge. */
  | { ok: false; response: Response };

export type ProtectedResource = {
  /** Where the metadata is served: `/.well-known/oauth-protected-resource` and the resource's path. */
  metadataPath: string;
  /** The metadata's absolute address, sent in every challenge as `resource_metadata`. */
  metadataUrl: string;
  metadata(): ProtectedResourceMetadata;
  /** The metadata for a GET on `metadataPath` or the plain well-known path; null for any other path. */
  handleMetadata(request: Request): Response | null;
  /** Checks the request's bearer token, and that it grants every one of `scopes`. */
  authenticate(
    request: Request,
    options?: { scopes?: string[] },
  ): Promise<Authentication>;
  /** Asks the service whether the token's subject may do the action on the resource (needs `access`). */
  decide(
    claims: AccessTokenClaims,
    request: {
      action: AccessAction;
      resource: AccessResource;
      context?: AccessContext;
    },
  ): Promise<AccessDecision>;
};

const WELL_KNOWN = "/.well-known/oauth-protected-resource";
/** What the service can sign with (domain/keys/jws.ts in the service). */
const ALGORITHMS = ["EdDSA", "ES256", "RS256"];
/** RFC 6750 §2.1: `Bearer`, one space or more, one b64token. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** jose's codes that say the token is bad; any other failure (no keys could be loaded) is not the token's. */
const TOKEN_FAULTS: Record<string, string> = {
  ERR_JWT_EXPIRED: "the token has expired",
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: "the token's signature is not valid",
  ERR_JWKS_NO_MATCHING_KEY: "the token is not signed by a key of the issuer",
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: "the token does not name the key that signed it",
  ERR_JOSE_ALG_NOT_ALLOWED: "the token's algorithm is not accepted",
  ERR_JOSE_NOT_SUPPORTED: "the token uses a feature that is not supported",
  ERR_JWS_INVALID: "the token is not a signed JWT",
  ERR_JWT_INVALID: "the token is not a signed JWT",
};

export function createProtectedResource(
  options: ProtectedResourceOptions,
): ProtectedResource {
  const resource = new URL(options.resource);
  // RFC 8707 §2: no fragment; a query would have to survive in the well-known address, so none either.
  if (resource.hash || resource.search) {
    throw new TypeError(
      "the resource indicator must have no query and no fragment",
    );
  }
  const issuer = options.issuer;
  new URL(issuer); // throws for an address that is not absolute
  // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
  const metadataPath = WELL_KNOWN +
    (resource.pathname === "/" ? "" : resource.pathname);
  const metadataUrl = resource.origin + metadataPath;
  const jwksUri = options.jwksUri ??
    `${issuer.replace(/\/+$/, "")}/.well-known/jwks.json`;
  const send = options.fetch;
  // jose caches the keys and loads them again for a token of a key it does not know (at most every 30 s).
  const keys = createRemoteJWKSet(
    new URL(jwksUri),
    send ? { [customFetch]: (url, init) => send(url, init) } : {},
  );

  const metadata = (): ProtectedResourceMetadata => ({
    resource: options.resource,
    authorization_servers: [issuer],
    ...(options.scopesSupported ? { scopes_supported: [...options.scopesSupported] } : {}),
    bearer_methods_supported: ["header"],
    ...(options.resourceName ? { resource_name: options.resourceName } : {}),
  });

  /**
   * An RFC 6750 §3 refusal, with `resource_metadata` in its challenge (RFC 9728 §5.1). `error` is null when
   * the request carried no token: §3.1 wants no error code in the challenge then (the body still has one).
   */
  function refuse(
    status: 400 | 401 | 403,
    error: string | null,
    description: string,
    scope: string[] = [],
  ) {
    const params = [
      ...(error ? [`error="${error}"`, `error_description="${description}"`] : []),
      ...(scope.length ? [`scope="${scope.join(" ")}"`] : []),
      `resource_metadata="${metadataUrl}"`,
    ];
    const response = new Response(
      JSON.stringify({
        error: error ?? "invalid_token",
        error_description: description,
      }),
      {
        status,
        headers: {
          "content-type": "application/json",
          "www-authenticate": `Bearer ${params.join(", ")}`,
        },
      },
    );
    return { ok: false as const, response };
  }

  /** The token's claims, or what is wrong with it (plain ASCII without quotes, as the challenge needs). */
  async function verify(token: string): Promise<AccessTokenClaims | string> {
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer,
        audience: options.resource,
        // jose compares `typ` without its `application/` prefix, so `application/at+jwt` passes too.
        typ: "at+jwt",
        algorithms: options.algorithms ?? ALGORITHMS,
        requiredClaims: ["sub", "client_id", "jti", "iat", "exp"],
      });
      const { sub, client_id, jti, scope } = payload;
      if (
        typeof sub !== "string" || typeof client_id !== "string" ||
        typeof jti !== "string"
      ) {
        return "the token's sub, client_id and jti must be strings";
      }
      if (scope !== undefined && typeof scope !== "string") {
        return "the token's scope must be a string";
      }
      return payload as AccessTokenClaims;
    } catch (err) {
      if (err instanceof errors.JWTClaimValidationFailed) {
        return err.reason === "missing"
          ? `the token has no ${err.claim}`
          : `the token's ${err.claim} is not accepted`;
      }
      if (err instanceof errors.JOSEError && err.code in TOKEN_FAULTS) {
        return TOKEN_FAULTS[err.code];
      }
      throw err;
    }
  }

  return {
    metadataPath,
    metadataUrl,
    metadata,
    handleMetadata(request) {
      const { pathname } = new URL(request.url);
      if (pathname !== metadataPath && pathname !== WELL_KNOWN) return null;
      if (request.method !== "GET" && request.method !== "HEAD") {
        return new Response(null, {
          status: 405,
          headers: { allow: "GET, HEAD" },
        });
      }
      return new Response(
        request.method === "HEAD" ? null : JSON.stringify(metadata()),
        {
          headers: {
            "content-type": "application/json",
            "cache-control": "public, max-age=3600",
            // Public facts, read by browser-based clients (an MCP inspector) from another origin.
            "access-control-allow-origin": "*",
          },
        },
      );
    },
    async authenticate(request, { scopes = [] } = {}) {
      const header = request.headers.get("authorization");
      // RFC 6750 §3.1: no credentials, or another scheme's, is a request that did not try; a broken one, 400.
      if (header === null || !/^bearer(\s|$)/i.test(header)) {
        return refuse(401, null, "a bearer token is required", scopes);
      }
      const token = BEARER.exec(header)?.[1];
      if (!token) {
        return refuse(
          400,
          "invalid_request",
          "the Authorization header is not one bearer token",
        );
      }
      const claims = await verify(token);
      if (typeof claims === "string") {
        return refuse(401, "invalid_token", claims, scopes);
      }
      const granted = new Set((claims.scope ?? "").split(" "));
      const missing = scopes.filter((s) => !granted.has(s));
      if (missing.length > 0) {
        return refuse(
          403,
          "insufficient_scope",
          `the token lacks ${missing.join(" ")}`,
          scopes,
        );
      }
      return { ok: true, claims };
    },
    decide(claims, { action, resource, context }) {
      if (!options.access) {
        return Promise.reject(
          new TypeError(
            "decide needs the `access` option (createAccessClient)",
          ),
        );
      }
      // The service's tokens: `sub` is the client's own id for the client-credentials grant, else the user's.
      const subject = {
        type: claims.sub === claims.client_id ? "client" : "user",
        id: claims.sub,
      };
      return options.access.evaluate({
        subject,
        action,
        resource,
        ...(context ? { context } : {}),
      });
    },
  };
}

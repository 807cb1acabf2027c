/**
 * createAdminClient: the generated API classes, ready to call with a client's credentials. It gets an access
 * token with the client-credentials grant, caches it, renews it before it expires (and once more when the
 * service refuses it, e.g. after a secret rotation), and turns every failed call into an ApiError.
 */
import {
  AuditApi,
  ClientsApi,
  GrantsApi,
  IdentityProvidersApi,
  KeysApi,
  ObjectsApi,
  OrganizationsApi,
  ProjectsApi,
  ResourcesApi,
  RolesApi,
  ServiceApi,
  SessionsApi,
  TokensApi,
  UsersApi,
  WebhooksApi,
} from "./generated/api.ts";
import { Configuration } from "./generated/configuration.ts";
import type { FetchAPI } from "./generated/runtime.ts";
import { ApiError } from "./errors.ts";
import { type AccessClient, createAccessClient } from "./access.ts";
import { createObjectsClient, type GrantsClient, type ObjectsClient } from "./objects.ts";

export type AdminClientOptions = {
  /** The service's address, e.g. `https://auth.example.com` (no trailing `/api/v1`). */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The fetch to send requests with; the platform's by default. */
  fetch?: FetchAPI;
  /** Renew the token this many seconds before it expires (default 30, at most half its lifetime). */
  renewBeforeSeconds?: number;
};

export type AdminClient = {
  projects: ProjectsApi;
  resources: ResourcesApi;
  roles: RolesApi;
  users: UsersApi;
  clients: ClientsApi;
  /** Objects of a resource (the generated class; `project(id).objects` is the typed one). */
  objects: ObjectsApi;
  /** Roles granted on objects (the generated class; `project(id).grants` is the typed one). */
  grants: GrantsApi;
  /** The typed objects and grants clients of one project (docs/objects-and-grants.md). */
  project(projectId: string): { objects: ObjectsClient; grants: GrantsClient };
  /** Organizations of a project, their members and the organization roles each holds (docs/organizations.md). */
  organizations: OrganizationsApi;
  /** Users' login sessions: list them, end one, sign a user out everywhere. */
  sessions: SessionsApi;
  /** Webhook subscriptions of a project, their deliveries and signing secrets. */
  webhooks: WebhooksApi;
  identityProviders: IdentityProvidersApi;
  /** A project's audit trail (newest first, by cursor). */
  audit: AuditApi;
  /** The service's signing keys: list, rotate, revoke. Only a client of the system project may call them. */
  keys: KeysApi;
  /** Introspection and revocation, authenticated with this client's id and secret. */
  tokens: TokensApi;
  /** Health, readiness, the JWKS and the authorization server metadata. */
  service: ServiceApi;
  /** AuthZEN decisions and searches about this client's project (its admin client holds `access:*`). */
  access: AccessClient;
  /** The cached access token, fetched or renewed when needed. */
  accessToken(): Promise<string>;
};

type Cached = { token: string; renewAt: number };

/** RFC 6749 §2.3.1: the id and the secret are form-urlencoded before they are joined and base64-encoded. */
function basicAuthorization(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${btoa(`${enc(clientId)}:${enc(clientSecret)}`)}`;
}

/**
 * An admin client for one machine client of the service (a project's admin client, or any client with the
 * permissions the calls need). Every method of every API class resolves with the answer's body, or rejects
 * with an `ApiError` (network failures reject with the platform's own error).
 */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const send: FetchAPI = options.fetch ?? ((url, init) => fetch(url, init));
  const renewBefore = options.renewBeforeSeconds ?? 30;
  let cached: Cached | undefined;
  let pending: Promise<Cached> | undefined;

  async function requestToken(): Promise<Cached> {
    const response = await send(`${baseUrl}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basicAuthorization(
          options.clientId,
          options.clientSecret,
        ),
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: "grant_type=client_credentials",
    });
    if (!response.ok) throw await ApiError.fromResponse(response);
    const body = await response.json() as {
      access_token: string;
      expires_in: number;
    };
    const margin = Math.min(renewBefore, body.expires_in / 2);
    return {
      token: body.access_token,
      renewAt: Date.now() + (body.expires_in - margin) * 1000,
    };
  }

  async function accessToken(): Promise<string> {
    if (cached && Date.now() < cached.renewAt) return cached.token;
    // Calls that need a token at the same moment share one token request.
    pending ??= requestToken().finally(() => (pending = undefined));
    cached = await pending;
    return cached.token;
  }

  /** Sends a call that needs no token; throws ApiError for a failed answer. */
  const checkedFetch: FetchAPI = async (url, init) => {
    const response = await send(url, init);
    if (!response.ok) throw await ApiError.fromResponse(response);
    return response;
  };

  /** Adds the bearer token unless the call brings its own credentials; throws ApiError for failed answers. */
  const authorizedFetch: FetchAPI = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const ownCredentials = headers.has("authorization");
    let token: string | undefined;
    if (!ownCredentials) {
      headers.set("authorization", `Bearer ${token = await accessToken()}`);
    }
    let response = await send(url, { ...init, headers });
    if (response.status === 401 && token !== undefined) {
      // The gate refused the token before doing anything (revoked by a secret rotation, say): get a new one and
      // send the call once more.
      await response.body?.cancel();
      if (cached?.token === token) cached = undefined;
      headers.set("authorization", `Bearer ${await accessToken()}`);
      response = await send(url, { ...init, headers });
    }
    if (!response.ok) throw await ApiError.fromResponse(response);
    return response;
  };

  const bearer = new Configuration({ basePath: baseUrl });
  const basic = new Configuration({
    basePath: baseUrl,
    username: options.clientId,
    password: options.clientSecret,
  });
  return {
    projects: new ProjectsApi(bearer, baseUrl, authorizedFetch),
    resources: new ResourcesApi(bearer, baseUrl, authorizedFetch),
    roles: new RolesApi(bearer, baseUrl, authorizedFetch),
    users: new UsersApi(bearer, baseUrl, authorizedFetch),
    clients: new ClientsApi(bearer, baseUrl, authorizedFetch),
    objects: new ObjectsApi(bearer, baseUrl, authorizedFetch),
    grants: new GrantsApi(bearer, baseUrl, authorizedFetch),
    project: (projectId) =>
      createObjectsClient({
        baseUrl,
        projectId,
        token: accessToken,
        fetch: send,
      }),
    organizations: new OrganizationsApi(bearer, baseUrl, authorizedFetch),
    sessions: new SessionsApi(bearer, baseUrl, authorizedFetch),
    webhooks: new WebhooksApi(bearer, baseUrl, authorizedFetch),
    identityProviders: new IdentityProvidersApi(
      bearer,
      baseUrl,
      authorizedFetch,
    ),
    audit: new AuditApi(bearer, baseUrl, authorizedFetch),
    keys: new KeysApi(bearer, baseUrl, authorizedFetch),
    tokens: new TokensApi(basic, baseUrl, checkedFetch),
    service: new ServiceApi(bearer, baseUrl, checkedFetch),
    access: createAccessClient({ baseUrl, token: accessToken, fetch: send }),
    accessToken,
  };
}

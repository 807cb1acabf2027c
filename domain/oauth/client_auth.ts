/**
 * Client authentication for every endpoint that authenticates a client: the token endpoint, revocation and
 * introspection (RFC 6749 §2.3.1). The HTTP edge reads the credentials; this decides whether they authenticate
 * the client, throttles failed secrets per client id and address, and applies the client's
 * `token_endpoint_auth_method`.
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import { type ClientWithProjectRow, findClientWithProject } from "../../db/oauth/clients.ts";
import { clearAttempts, countAttempt } from "../../db/shared/throttle.ts";
import { clientSource, recentEvent, record } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { secretMatches } from "../shared/secrets.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { addressKey, THROTTLE, throttled } from "../shared/throttle.ts";
import { touchMetadataClient } from "../../db/oauth/client_metadata.ts";
import { isClientIdUrl, presentedMetadataClient, requireAdmitted } from "./client_metadata.ts";

/** What a request presented to identify its client, as the HTTP edge read it. */
export type PresentedClient = {
  /** From HTTP Basic, or else the form's `client_id`. */
  clientId?: string;
  /** From HTTP Basic only. */
  secret?: string;
  /** Whether HTTP Basic credentials were sent. */
  basic: boolean;
  /** Malformed credentials, raised when the client is authenticated so that earlier checks keep their order. */
  error?: AppError;
  /** Where the request came from: failed secrets are throttled per client id and address. */
  request: RequestInfo;
  /** Set by `authenticateClient` once the client is authenticated: for the request log. */
  authenticated?: { projectId: string; clientId: string };
};

/**
 * - `token`: the token endpoint. An unknown client is `invalid_client`; a secret, when sent, must match; a
 *   `client_secret_basic` client must send it; then the client and its project must be active.
 * - `revocation`: HTTP Basic, or a public client's `client_id`; the client's state is not checked.
 * - `introspection`: HTTP Basic only; then the client and its project must be active.
 */
export type AuthenticationRule = "token" | "revocation" | "introspection";

/** 401 `invalid_client_credentials`; the HTTP edge adds the `WWW-Authenticate: Basic` challenge. */
export function badCredentials(description?: string): AppError {
  return new AppError("invalid_client_credentials", { description });
}

/**
 * `projectOf`: the project of the code or token the request presents, which tells apart the rows of a client
 * identified by a URL that several projects recorded (domain/oauth/client_metadata.ts).
 */
export async function authenticateClient(
  sql: Sql,
  presented: PresentedClient,
  rule: AuthenticationRule,
  projectOf?: () => Promise<string | undefined>,
): Promise<ClientWithProjectRow> {
  if (presented.error) throw presented.error;
  if (rule === "introspection" && !presented.basic) {
    throw badCredentials("authenticate the client with HTTP Basic");
  }
  if (presented.clientId === undefined) {
    throw new AppError("invalid_params", {
      details: [{ field: "client_id", issue: "required without HTTP Basic authentication" }],
    });
  }
  const key = `client:${presented.clientId}:${addressKey(presented.request.ip)}`;
  const metadataUrl = isClientIdUrl(presented.clientId) ? presented.clientId : null;
  const clientId = metadataUrl === null
    ? presented.clientId
    : await presentedMetadataClient(sql, metadataUrl, projectOf);
  if (clientId === undefined) {
    throw rule === "token" || !presented.basic ? new AppError("invalid_client") : badCredentials();
  }
  const throttle = presented.secret === undefined ? undefined : { key, policy: THROTTLE.client };
  const client = await retryRead(() => findClientWithProject(sql, clientId, throttle));
  if (!client) throw rule === "token" || !presented.basic ? new AppError("invalid_client") : badCredentials();
  if (presented.secret !== undefined) {
    if (client.throttle_wait !== null) {
      await failedEvent(sql, client, presented, rule, "throttled");
      throw throttled(client.throttle_wait, "too many failed client authentications");
    }
    if (!secretMatches(presented.secret, client.secret_hash)) {
      // Counted after the comparison, so that a right secret costs no write; a burst of parallel wrong ones
      // can pass the limit by its size, which matters nothing against 256-bit secrets.
      const wait = await countAttempt(sql, key, THROTTLE.client);
      await failedEvent(sql, client, presented, rule, wait === null ? "wrong_secret" : "throttled");
      if (wait !== null) throw throttled(wait, "too many failed client authentications");
      throw badCredentials("the client secret is wrong");
    }
    if (client.throttle_failures) await clearAttempts(sql, key);
  } else if (client.token_endpoint_auth_method === "client_secret_basic") {
    throw badCredentials(
      "this client authenticates with HTTP Basic (token_endpoint_auth_method client_secret_basic)",
    );
  }
  if (rule !== "revocation") {
    if (!client.is_active) throw new AppError("client_not_active");
    if (!client.project_is_active) throw new AppError("project_not_active");
    // Live: a project that no longer admits the URL's host refuses its next token request.
    if (client.metadata_url !== null) {
      requireAdmitted(client.project_client_metadata_documents, client.metadata_url);
      await touchMetadataClient(sql, client.id);
    }
  }
  presented.authenticated = { projectId: client.project_id, clientId: client.id };
  return client;
}

/**
 * `authenticateClient` for a request that presents a code or token, read once by `read`: it tells apart the
 * projects of a URL client when several recorded it, and the grant goes on with it.
 */
export async function authenticateWith<T extends { project_id: string }>(
  sql: Sql,
  presented: PresentedClient,
  rule: AuthenticationRule,
  read: () => Promise<T | undefined>,
  /** When `read` finds nothing: another way to the project (revocation's access tokens). */
  otherwise?: () => Promise<string | undefined>,
): Promise<{ client: ClientWithProjectRow; row: T | undefined }> {
  let found: { row: T | undefined } | undefined;
  const client = await authenticateClient(sql, presented, rule, async () => {
    found = { row: await read() };
    return found.row?.project_id ?? await otherwise?.();
  });
  return { client, row: found ? found.row : await read() };
}

const ENDPOINTS: Record<AuthenticationRule, string> = {
  token: "token",
  revocation: "revoke",
  introspection: "introspect",
};

/**
 * A `client_auth.failed` event: one per client and minute at most, like `login.throttled`, so that a flood of
 * wrong secrets cannot flood the trail (the throttle counts every one). The secret is never recorded.
 */
async function failedEvent(
  sql: Sql,
  client: ClientWithProjectRow,
  presented: PresentedClient,
  rule: AuthenticationRule,
  reason: "wrong_secret" | "throttled",
): Promise<void> {
  const details = { client_id: client.id };
  if (await recentEvent(sql, client.project_id, "client_auth.failed", details, 60)) return;
  await record(sql, {
    projectId: client.project_id,
    type: "client_auth.failed",
    source: clientSource(client.id, presented.request),
    target: { type: "client", id: client.id },
    details: { ...details, endpoint: ENDPOINTS[rule], reason },
  });
}

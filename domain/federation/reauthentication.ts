/**
 * Signing in again at the linked provider, from the account page: the fresh proof of a user without a password
 * (domain/factors/proof.ts). The button sends the browser to the provider with `prompt=login` and `max_age=0`
 * (OpenID Connect Core §3.1.2.1), and `state`, `nonce` and PKCE S256 kept server-side with the browser session
 * that asked, spent once. The callback (the provider's usual redirect URI) validates the ID token as a login does
 * and then requires that it names the identity linked to that session's user and that its `auth_time` is not
 * older than the request (a provider that ignored `max_age=0` proves nothing). The browser session is then
 * freshly proven for FRESH_PROOF_SECONDS (`user.reauthenticated`); anything wrong is
 * `user.reauthentication_failed` and a message on the account page.
 */
import type { Sql } from "../../db/connection.ts";
import {
  consumeFederationState,
  findIdentity,
  findLinkedUser,
  findProvider,
  insertFederationState,
  isReauthState,
} from "../../db/federation/identity_providers.ts";
import { findLiveSession, markReauthenticated } from "../../db/signin/sso.ts";
import { record, type Source, userSource } from "../audit/audit.ts";
import { newSecret } from "../shared/ids.ts";
import { hashSecret, isBrowserSecret } from "../shared/secrets.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { OutboundError } from "../outbound/outbound.ts";
import { type Metadata, metadataFor, type ProviderSettings } from "./identity_providers.ts";
import { redeem, Refused } from "./federation_tokens.ts";
import { authorizationUrl, wrongIssuer } from "./federation.ts";

/** How long the round trip to the provider may take, seconds. */
const REAUTH_TTL = 600;
/** Clock skew allowed between the provider and this service when comparing `auth_time`, seconds. */
const SKEW = 30;

/** A failed re-authentication: the message for the account page, and the project to show it in. */
export class ReauthFailure extends Error {
  constructor(readonly reason: string, readonly projectId: string | null) {
    super(reauthMessage(reason));
  }
}

/** The account page's message for a failure's reason (any other reason: a general one). */
export function reauthMessage(reason: string): string {
  return MESSAGES[reason] ?? MESSAGES.default;
}

/** Whether a callback's state is a re-authentication's (not a login's): it is then handled here. */
export async function isReauthentication(sql: Sql, state: string | undefined): Promise<boolean> {
  return !!state && state.length <= 200 && await isReauthState(sql, hashSecret(state));
}

const MESSAGES: Record<string, string> = {
  not_linked: "Your account is not linked to that identity provider.",
  provider_inactive: "That identity provider is not available.",
  provider_unreachable: "The identity provider could not be reached. Try again later.",
  upstream_error: "The identity provider did not sign you in again. Try again.",
  another_identity: "You signed in at the identity provider as someone else. Sign in there as yourself.",
  stale_auth_time:
    "The identity provider did not ask you to sign in again, so it proves nothing. Try again, " +
    "or use a code of your authenticator.",
  state_mismatch:
    "This confirmation did not start in this browser, was already used or expired. Start again " +
    "from your account page.",
  default: "Signing in again at the identity provider failed. Try again.",
};

/** The account page's session asking: who, and where from. */
export type Asker = { projectId: string; userId: string; ssoSessionId: string; source: Source };

async function failed(
  sql: Sql,
  e: { projectId: string; userId: string | null; providerId: string; source: Source; reason: string },
  detail = "",
): Promise<ReauthFailure> {
  await record(sql, {
    projectId: e.projectId,
    type: "user.reauthentication_failed",
    source: e.source,
    target: { type: "user", id: e.userId },
    details: {
      provider_id: e.providerId,
      reason: e.reason,
      ...(detail ? { detail: detail.slice(0, 300) } : {}),
    },
  });
  return new ReauthFailure(e.reason, e.projectId);
}

/** The button: the provider's authorization URL, asking it to authenticate the user again. */
export async function startReauthentication(
  sql: Sql,
  s: ProviderSettings,
  asker: Asker,
  providerId: string,
): Promise<string> {
  const { projectId, userId } = asker;
  // Each click stores a state: counted like the login pages an address opens (429 beyond).
  await attempt(sql, `authorize:${addressKey(asker.source.request?.ip ?? null)}`, THROTTLE.loginPage);
  const fail = (reason: string, detail = "") =>
    failed(sql, { projectId, userId, providerId, source: asker.source, reason }, detail);
  const provider = await findProvider(sql, projectId, providerId);
  if (!provider || !(await findIdentity(sql, projectId, providerId, userId))) throw await fail("not_linked");
  if (!provider.is_active) throw await fail("provider_inactive");
  let metadata: Metadata;
  try {
    metadata = await metadataFor(sql, s.allowPrivate, provider);
  } catch (err) {
    throw await fail("provider_unreachable", err instanceof Error ? err.message : "");
  }
  const state = newSecret();
  const nonce = newSecret();
  const verifier = newSecret();
  await insertFederationState(sql, {
    state_hash: hashSecret(state),
    project_id: projectId,
    provider_id: provider.id,
    request_id: null,
    reauth: { session_id: asker.ssoSessionId, user_id: userId },
    nonce,
    code_verifier: verifier,
    ttlSeconds: REAUTH_TTL,
  });
  return await authorizationUrl(s, provider, metadata, { state, nonce, verifier }, {
    prompt: "login",
    max_age: "0",
  });
}

/**
 * The provider's redirect back with a re-authentication's state: checks it as the module's comment says and
 * marks the browser session freshly proven. Answers its project (the account page to go back to).
 */
export async function reauthenticationCallback(
  sql: Sql,
  s: ProviderSettings,
  providerId: string,
  query: Record<string, string>,
  browser: string | undefined,
  request: RequestInfo,
): Promise<{ projectId: string }> {
  const spent = await consumeFederationState(sql, hashSecret(query.state ?? ""));
  const row = spent.row;
  const nowhere = new ReauthFailure("state_mismatch", null);
  if (!row || row.reauth_session_id === null || row.user_id === null) throw nowhere;
  const projectId = row.project_id;
  const userId = row.user_id;
  const source = userSource(userId, request);
  const fail = (reason: string, detail = "") =>
    failed(sql, { projectId, userId, providerId, source, reason }, detail);
  if (row.provider_id !== providerId) throw await fail("state_mismatch", "another provider's state");
  const session = isBrowserSecret(browser)
    ? await findLiveSession(sql, row.reauth_session_id, hashSecret(browser))
    : undefined;
  if (!session || session.user_id !== userId) throw await fail("state_mismatch", "another browser's state");
  if (query.error) throw await fail("upstream_error", query.error.slice(0, 100));
  if (!query.code) throw await fail("upstream_error", "the callback has neither code nor error");
  const provider = await findProvider(sql, projectId, providerId);
  if (!provider || !provider.is_active) throw await fail("provider_inactive");
  const wrong = wrongIssuer(provider, query.iss);
  if (wrong) throw await fail("issuer_mismatch", wrong);
  let up;
  try {
    up = await redeem(sql, s, provider, query.code, row);
  } catch (err) {
    if (err instanceof Refused) throw await fail(err.reason, err.message);
    if (err instanceof OutboundError) throw await fail("provider_unreachable", err.message);
    throw err;
  }
  const linked = await findLinkedUser(sql, projectId, providerId, up.sub);
  if (!linked || linked.id !== userId) {
    throw await fail("another_identity", "the ID token names another user");
  }
  const asked = Math.floor(row.created_at.getTime() / 1000);
  if (up.authTime === null || up.authTime < asked - SKEW || up.authTime > Date.now() / 1000 + SKEW) {
    throw await fail("stale_auth_time", `auth_time ${up.authTime ?? "missing"}, asked at ${asked}`);
  }
  if (!(await markReauthenticated(sql, session.id))) throw await fail("state_mismatch", "the session ended");
  await record(sql, {
    projectId,
    type: "user.reauthenticated",
    source,
    target: { type: "user", id: userId },
    details: { provider_id: providerId },
  });
  return { projectId };
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): ends the browser's single sign-on session in
 * the project (and the one the ID token names), revokes the login sessions it created, then sends the browser
 * to a registered `post_logout_redirect_uri` or shows a "signed out" page. A hint that cannot be trusted
 * (forged, expired, of another client or project) never redirects.
 *
 * A browser signed in to the project confirms first (§2: the OP MUST ask when no `id_token_hint` was given, or
 * when the ID token does not belong to the browser's current session): otherwise any site could sign a browser
 * out by linking to /logout. The confirmation form carries a token bound to the browser's cookie, which another
 * site can neither read nor set. A request that carries no cookie (a cross-site POST) asks nothing: it can end
 * only the session a trusted hint names.
 */
import { type ClientWithProjectRow, findClientWithProject } from "../../db/oauth/clients.ts";
import { type Sql, transaction } from "../../db/connection.ts";
import {
  browserHasSessions,
  browserOwnsSession,
  type EndedSsoSession,
  endSsoSessions,
} from "../../db/signin/sso.ts";
import { record, userSource } from "../audit/audit.ts";
import { redirectWith } from "./login.ts";
import {
  postLogoutRedirectUriAllowed,
  type UnregisteredUri,
  unregisteredUri,
} from "../projects/redirect_uris.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import type { TokenService } from "../keys/tokens.ts";
import { isBrowserSecret } from "../shared/secrets.ts";

export type LogoutOutcome = {
  /** Where to send the browser, or null for the page. */
  location: string | null;
  /** The page's status and message when there is no redirect. */
  status: 200 | 400;
  message: string;
  /** The browser has no live session left: its cookie can go. */
  clearCookie: boolean;
  /** Why the browser was not sent back, for the request log (e.g. `post_logout_redirect_uri_not_registered`). */
  reason?: string;
  /** An unregistered `post_logout_redirect_uri`: what the page may say of it and where to register it. */
  unregistered?: UnregisteredUri;
  /** Nothing was done: the user must confirm (the request's parameters go back with the form). */
  confirm?: {
    token: string;
    params: Record<string, string>;
    projectName: string | null;
    /** Why the page asks again (the form was for an earlier sign-in of the browser), or null the first time. */
    notice: string | null;
    /** The registered `post_logout_redirect_uri` the confirmed form may be sent on to, if any. */
    redirectUri: string | null;
  };
};

/** The confirmation form's token: derived from the browser's cookie, so only a page that saw it has it. */
function confirmationToken(browser: string): string {
  return encodeBase64Url(hashSecret(`logout-confirmation:${browser}`));
}

/** Whether `presented` is the confirmation token of this browser (in constant time). */
export function confirmsLogout(browser: string | undefined, presented: string | undefined): boolean {
  return isBrowserSecret(browser) && presented !== undefined &&
    secretMatches(presented, hashSecret(confirmationToken(browser)));
}

const SIGNED_OUT = "You are signed out.";

/** Ends what the request names and decides where the browser goes. */
export async function logout(
  sql: Sql,
  tokens: TokenService,
  params: Record<string, string[]>,
  browser: string | undefined,
  request: RequestInfo,
  /**
   * `confirmed`: the confirmation form's, with this browser's token (`confirmsLogout`); `stale`: the form's,
   * with a token that is not (the browser signed in again since); `none`: not the form's.
   */
  confirmation: "confirmed" | "stale" | "none",
): Promise<LogoutOutcome> {
  const confirmed = confirmation === "confirmed";
  const page = (status: 200 | 400, message: string, clearCookie = false): LogoutOutcome => ({
    location: null,
    status,
    message,
    clearCookie,
  });
  if (
    Object.entries(params).some(([k, vs]) =>
      vs.length > 1 || k.includes("\0") || vs.some((v) => v.includes("\0"))
    )
  ) {
    return page(400, "The sign-out request is malformed: nothing was done.");
  }
  const get = (name: string) => params[name]?.[0] || undefined;
  const hintToken = get("id_token_hint");
  const clientId = get("client_id");
  const redirectUri = get("post_logout_redirect_uri");
  const state = get("state");

  const hint = hintToken && hintToken.length <= 8192 ? await tokens.verifyIdTokenHint(hintToken) : null;
  const hintClient = hint?.ok ? await findClientWithProject(sql, hint.aud) : undefined;
  const named = clientId && clientId.length <= 100 ? await findClientWithProject(sql, clientId) : undefined;
  // The hint must be ours, live, and of the client the request names (§2: client_id must match its aud).
  const badHint = hintToken !== undefined &&
    (!hint?.ok || !hintClient || (clientId !== undefined && clientId !== hint.aud));
  const client: ClientWithProjectRow | undefined = badHint ? named : hintClient ?? named;
  const projectId = client?.project_id ?? null;

  const browserHash = isBrowserSecret(browser) ? hashSecret(browser) : null;
  // A browser with a live session in scope confirms, unless a trusted hint names one of its sessions.
  if (browserHash && !confirmed && await browserHasSessions(sql, browserHash, projectId)) {
    const vouched = !badHint && hint?.ok && hint.sid !== null &&
      await browserOwnsSession(sql, browserHash, hint.sid);
    if (!vouched) {
      // The request goes back with the form; a hint too long to be ours stays out (the form has a size limit).
      const given = Object.fromEntries(
        ["id_token_hint", "client_id", "post_logout_redirect_uri", "state"]
          .flatMap((k) => get(k) === undefined || get(k)!.length > 8192 ? [] : [[k, get(k)!]]),
      );
      return {
        ...page(200, "Sign out?"),
        confirm: {
          token: confirmationToken(browser!),
          params: given,
          projectName: client ? client.project_name : null,
          notice: confirmation === "stale"
            ? "This sign-out page was for another sign-in. Confirm again."
            : null,
          redirectUri:
            redirectUri !== undefined && client && postLogoutRedirectUriAllowed(client, redirectUri)
              ? redirectUri
              : null,
        },
      };
    }
  }
  const ended = await transaction(sql, async (tx) => {
    const all: EndedSsoSession[] = [];
    if (browserHash) all.push(...await endSsoSessions(tx, { browserHash, projectId }));
    // The ID token names its single sign-on session: it ends even when the cookie did not come along (a
    // cross-site POST carries no SameSite=Lax cookie).
    if (!badHint && hint?.ok && hint.sid && hintClient) {
      all.push(...await endSsoSessions(tx, { id: hint.sid, projectId: hintClient.project_id }));
    }
    for (const e of all) {
      await record(tx, {
        projectId: e.project_id,
        type: "sso_session.ended",
        source: userSource(e.user_id, request),
        target: { type: "sso_session", id: e.id },
        details: {
          reason: "logout",
          client_id: client && client.project_id === e.project_id ? client.id : null,
          sessions_revoked: e.sessions_revoked,
        },
      });
    }
    return all;
  });
  const clearCookie = browserHash !== null && !(await browserHasSessions(sql, browserHash));
  const done = ended.length > 0 ? SIGNED_OUT : "You are signed out (there was no session to end).";

  if (badHint) {
    return page(
      400,
      `${done} The application's sign-out request could not be verified (its ID token is ${
        hint?.ok === false && hint.reason === "expired" ? "expired" : "not valid for it"
      }), so you were not sent back.`,
      clearCookie,
    );
  }
  if (clientId !== undefined && !named) {
    return page(400, `${done} The application that sent you here is not known.`, clearCookie);
  }
  if (redirectUri === undefined) return page(200, done, clearCookie);
  if (!client) {
    return page(
      400,
      `${done} post_logout_redirect_uri needs id_token_hint or client_id: you were not sent back.`,
      clearCookie,
    );
  }
  if (!postLogoutRedirectUriAllowed(client, redirectUri)) {
    return {
      ...page(
        400,
        `${done} The post_logout_redirect_uri is not registered for this application.`,
        clearCookie,
      ),
      reason: "post_logout_redirect_uri_not_registered",
      unregistered: unregisteredUri(client, "post_logout_redirect_uri", redirectUri),
    };
  }
  if (!client.is_active || !client.project_is_active) {
    return page(400, `${done} The application that sent you here is disabled.`, clearCookie);
  }
  return {
    location: redirectWith(redirectUri, { state: state ?? null }),
    status: 200,
    message: done,
    clearCookie,
  };
}

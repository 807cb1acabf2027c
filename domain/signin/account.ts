/**
 * The account page's rules: who it is for (the browser's single sign-on session, so the same sign-in as the
 * applications'), its CSRF token (derived from the browser's secret cookie, which no other site can read), and
 * what the page shows. Changes go through the same functions as the current user's API, as the user.
 */
import { type ConsentRow, listUserConsents } from "../../db/signin/consents.ts";
import { type ActingAgent, listActingAgents } from "../../db/oauth/delegated_tokens.ts";
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  findBrowserSession,
  listBrowserProjects,
  listUserSessions,
  revokeAllUserSessions,
} from "../../db/signin/sso.ts";
import { findUser } from "../../db/accounts/users.ts";
import type { Session } from "../../openapi/sessions.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { type FactorActor, FRESH_PROOF_SECONDS } from "../factors/proof.ts";
import { factorsOf } from "../factors/mfa.ts";
import { listUserIdentities } from "../accounts/identities.ts";
import type { ExternalIdentity } from "../../openapi/identity_providers.ts";
import type { Principal, RequestInfo } from "../shared/principal.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { isBrowserSecret } from "../shared/secrets.ts";

/** The signed-in user of the account page, as a principal of their own (actions are audited as theirs). */
export type Account = {
  projectId: string;
  projectName: string;
  userId: string;
  ssoSessionId: string;
  principal: Principal;
  actor: FactorActor;
};

/**
 * The account of the browser's live session (in `projectId` when asked, else its newest), or null when the
 * browser is not signed in. Its principal names the browser session: `token_jti` is `sso:<session id>`.
 */
export async function accountOf(
  sql: Sql,
  browser: string | undefined,
  projectId: string | null,
  request: RequestInfo,
): Promise<Account | null> {
  if (!isBrowserSecret(browser)) return null;
  const row = await retryRead(() => findBrowserSession(sql, hashSecret(browser), projectId));
  if (!row) return null;
  const principal: Principal = {
    projectId: row.project_id,
    clientId: "account",
    userId: row.user_id,
    sessionId: row.id,
    jti: `sso:${row.id}`,
    isSystem: false,
    isAdmin: false,
    request,
  };
  return {
    projectId: row.project_id,
    projectName: row.project_name,
    userId: row.user_id,
    ssoSessionId: row.id,
    principal,
    actor: {
      projectId: row.project_id,
      userId: row.user_id,
      source: sourceOf(principal),
      reauthenticatedAt: row.reauthenticated_at,
    },
  };
}

/** The account page's CSRF token: a digest of the browser's secret, so only a page of this origin knows it. */
export function accountCsrf(browser: string): string {
  return encodeBase64Url(hashSecret(`account-csrf:${browser}`));
}

export function csrfMatches(browser: string | undefined, token: string | undefined): boolean {
  if (!isBrowserSecret(browser) || !token) return false;
  return secretMatches(token, hashSecret(accountCsrf(browser)));
}

export type AccountView = {
  displayName: string;
  email: string | null;
  hasPassword: boolean;
  sessions: Session[];
  factors: Awaited<ReturnType<typeof factorsOf>>;
  identities: ExternalIdentity[];
  /** Connected apps: the third-party clients the user allowed (domain/signin/consent.ts). */
  consents: ConsentRow[];
  /** Agents acting for the user: clients holding live tokens exchanged for them (domain/oauth/delegations.ts). */
  agents: ActingAgent[];
  projects: { project_id: string; project_name: string }[];
  /** A user without a password who signed in again at their provider: until when that proves it is them. */
  freshUntil: string | null;
};

/** Everything the account page shows, read now. */
export async function accountView(sql: Sql, account: Account, browser: string): Promise<AccountView | null> {
  return await retryRead(async () => {
    const user = await findUser(sql, account.projectId, account.userId, { withPasswordHash: true });
    if (!user) return null;
    const sessions = await listUserSessions(sql, account.projectId, account.userId, {
      page_num: 1,
      page_size: 50,
    });
    const identities = await listUserIdentities(sql, account.projectId, account.userId);
    return {
      displayName: user.display_name,
      email: user.email,
      hasPassword: Boolean(user.password_hash),
      sessions: sessions.data,
      factors: await factorsOf(sql, account.actor),
      identities: identities.data,
      consents: await listUserConsents(sql, account.projectId, account.userId),
      agents: await listActingAgents(sql, account.projectId, account.userId),
      projects: await listBrowserProjects(sql, hashSecret(browser)),
      freshUntil: freshUntil(account.actor.reauthenticatedAt ?? null),
    };
  });
}

function freshUntil(at: Date | null): string | null {
  const until = at ? at.getTime() + FRESH_PROOF_SECONDS * 1000 : 0;
  return until > Date.now() ? new Date(until).toISOString() : null;
}

/** Signs the user out everywhere: every login session and browser session ends (this one too). */
export async function endAllOwnSessions(sql: Sql, account: Account): Promise<void> {
  await transaction(sql, async (tx) => {
    const count = await revokeAllUserSessions(tx, account.projectId, account.userId);
    await record(tx, {
      projectId: account.projectId,
      type: "user.sessions_ended",
      source: account.actor.source,
      target: { type: "user", id: account.userId },
      details: { sessions_revoked: count },
    });
  });
}

/** The user's name and email as they are (a profile form changes only the name). */
export async function currentProfile(sql: Sql, account: Account) {
  const user = await findUser(sql, account.projectId, account.userId);
  if (!user) return null;
  return { display_name: user.display_name, email: user.email, avatar_url: user.avatar_url };
}

/**
 * One-time links mailed to users: password reset (asked on the login page or by an admin), invitation (a user
 * made without a password chooses one) and email verification. A link is 256 random bits of which only the
 * SHA-256 is stored; it works once, until it expires, for the address it was sent to, and while the user's
 * password is the one it was issued under, so a password set by any path kills every earlier link. Each link
 * and its mail are written in one transaction with their audit event; the outbox sends the mail (domain/events/mail.ts).
 */
import { type Sql, transaction } from "../../db/connection.ts";
import {
  consumeLink,
  endLinks,
  extendAuthorizationRequest,
  findLink,
  findMailUser,
  findMailUserByEmail,
  findProjectName,
  insertLink,
  type LinkPurpose,
  type LinkRow,
  type MailUserRow,
  setPasswordFromLink,
  verifyEmail,
} from "../../db/events/mail.ts";
import {
  type AuthorizationRequestRow,
  endSessions,
  findAuthorizationRequest,
} from "../../db/oauth/sessions.ts";
import { findClientWithProject } from "../../db/oauth/clients.ts";
import { insertSsoSession, rekeyBrowser } from "../../db/signin/sso.ts";
import { redirectUriAllowed } from "../projects/redirect_uris.ts";
import { clearAttempts, countAttempt } from "../../db/shared/throttle.ts";
import { record, type Source } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { queueMail } from "../events/mail.ts";
import { mailNotice } from "./notices.ts";
import { duration } from "../events/mail_templates.ts";
import { hashPassword } from "./passwords.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import { addressKey, attempt } from "../shared/throttle.ts";
import { isBrowserSecret } from "../shared/secrets.ts";
import { accountKey, normalizeEmail } from "./emails.ts";

export type { LinkRow };

export type LinkSettings = {
  publicUrl: string;
  vault: KeyVault | null;
  passwordResetTtl: number;
  invitationTtl: number;
  emailVerificationTtl: number;
};

/** Reset requests: per address 20 per 10 minutes (429); per account 3 per 15 minutes (more are not sent). */
export const RESET_THROTTLE = {
  address: { kind: "limit", free: 20, window: 600 },
  account: { kind: "limit", free: 3, window: 900 },
} as const;

/** Every reset request takes at least this long, mail or not, so that timing tells nothing. */
export const RESET_ANSWER_MS = 400;

const PURPOSE_EVENT = {
  password_reset: "password_reset.requested",
  invitation: "invitation.sent",
  email_verification: "email.verification_sent",
} as const;

const ttlOf = (s: LinkSettings, purpose: LinkPurpose) =>
  purpose === "password_reset"
    ? s.passwordResetTtl
    : purpose === "invitation"
    ? s.invitationTtl
    : s.emailVerificationTtl;

/** The page a link opens. */
export const linkPath = (purpose: LinkPurpose) =>
  purpose === "email_verification" ? "/authorize/verify" : "/authorize/password";

/**
 * Issues a link of `purpose` to the user's address and queues its mail, in the caller's transaction; earlier
 * unused links of the same purpose end. Returns the address and when the link expires.
 */
export async function issueLink(
  tx: Sql,
  s: LinkSettings,
  user: MailUserRow & { email: string },
  purpose: LinkPurpose,
  source: Source,
  authorizationRequestId: string | null = null,
): Promise<{ email: string; expires_at: string }> {
  const token = newSecret();
  const ttl = ttlOf(s, purpose);
  await endLinks(tx, user.project_id, user.id, [purpose]);
  await insertLink(tx, {
    project_id: user.project_id,
    id: newId(),
    user_id: user.id,
    purpose,
    token_hash: hashSecret(token),
    email: user.email,
    authorization_request_id: authorizationRequestId,
    ttlSeconds: ttl,
  });
  await queueMail(tx, s.vault, {
    projectId: user.project_id,
    kind: purpose,
    to: user.email,
    userId: user.id,
    fields: { project: user.project_name, name: user.display_name, valid_for: duration(ttl) },
    link: `${s.publicUrl}${linkPath(purpose)}?token=${token}`,
  });
  await record(tx, {
    projectId: user.project_id,
    type: PURPOSE_EVENT[purpose],
    source,
    target: { type: "user", id: user.id },
    details: { email: user.email },
  });
  return { email: user.email, expires_at: new Date(Date.now() + ttl * 1000).toISOString() };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * "Forgot your password?": mails a reset link when the address belongs to an active user of the project, and
 * answers the same way, in the same time, when it does not. Throttled per client address (429) and per account
 * (beyond it, nothing more is sent; the answer is the same).
 */
export async function requestPasswordReset(
  sql: Sql,
  s: LinkSettings,
  input: {
    projectId: string;
    email: string;
    /** The login page the request came from, when its browser is the one that opened it. */
    authorizationRequestId: string | null;
    request: { ip: string | null; user_agent: string | null; id: string };
  },
): Promise<void> {
  const started = Date.now();
  await attempt(sql, `reset:address:${addressKey(input.request.ip)}`, RESET_THROTTLE.address);
  try {
    const email = normalizeEmail(input.email) ?? "";
    const wait = await countAttempt(sql, `reset:account:${input.projectId}:${email}`, RESET_THROTTLE.account);
    const user = wait === null && email ? await findMailUserByEmail(sql, input.projectId, email) : undefined;
    if (user && user.is_active && user.project_active && user.email) {
      await transaction(sql, async (tx) => {
        await issueLink(
          tx,
          s,
          { ...user, email: user.email! },
          "password_reset",
          { actor: { type: "user", id: user.id, token_jti: null }, request: input.request },
          input.authorizationRequestId,
        );
        if (input.authorizationRequestId) {
          await extendAuthorizationRequest(tx, input.authorizationRequestId, s.passwordResetTtl);
        }
      });
    }
  } finally {
    await sleep(Math.max(0, RESET_ANSWER_MS - (Date.now() - started)));
  }
}

/** The user an admin mails, checked: exists (404), active with an address (400). */
async function mailableUser(
  tx: Sql,
  projectId: string,
  userId: string,
): Promise<MailUserRow & { email: string }> {
  const user = await findMailUser(tx, projectId, userId, true);
  if (!user) throw new AppError("user_not_found");
  if (!user.email) {
    throw new AppError("invalid_params", { details: [{ field: "user_id", issue: "the user has no email" }] });
  }
  if (!user.is_active) {
    throw new AppError("invalid_params", { details: [{ field: "user_id", issue: "the user is inactive" }] });
  }
  return { ...user, email: user.email };
}

/**
 * An admin mails a user a link: `password_reset` (any user with an address), `invitation` (only one without a
 * password yet), `email_verification` (only an unverified address). `check` runs after the user is found and
 * locked, before anything is written (least privilege).
 */
export async function sendLink(
  sql: Sql,
  s: LinkSettings,
  projectId: string,
  userId: string,
  purpose: LinkPurpose,
  source: Source,
  check: (tx: Sql) => Promise<void>,
): Promise<{ email: string; expires_at: string }> {
  return await transaction(sql, async (tx) => {
    const user = await mailableUser(tx, projectId, userId);
    await check(tx);
    if (purpose === "invitation" && user.has_password) {
      throw new AppError("invalid_params", {
        details: [{ field: "user_id", issue: "the user has a password already: send a password reset" }],
      });
    }
    if (purpose === "email_verification" && user.pending_email) {
      // The address waiting to replace the verified one.
      return await issueLink(tx, s, { ...user, email: user.pending_email }, purpose, source);
    }
    if (purpose === "email_verification" && user.email_verified) {
      throw new AppError("invalid_params", {
        details: [{ field: "user_id", issue: "the email is verified and no new one waits" }],
      });
    }
    return await issueLink(tx, s, user, purpose, source);
  });
}

/** What a link's page shows: its form, or that it no longer works (for a known project, with a way on). */
export type LinkState =
  | { state: "usable"; link: LinkRow }
  | { state: "stale"; projectId: string; projectName: string; purpose: LinkPurpose }
  | { state: "unknown" };

export async function linkState(sql: Sql, token: string, purposes: LinkPurpose[]): Promise<LinkState> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { state: "unknown" };
  const link = await findLink(sql, hashSecret(token));
  if (!link || !purposes.includes(link.purpose)) return { state: "unknown" };
  if (link.usable) return { state: "usable", link };
  return {
    state: "stale",
    projectId: link.project_id,
    projectName: link.project_name,
    purpose: link.purpose,
  };
}

/** The reason a link did not work at the moment it was used (used meanwhile, say). */
export class LinkUnusable extends Error {
  constructor() {
    super("the link is expired, used or not valid");
  }
}

/**
 * Sets the password through a reset or invitation link, in one transaction: the link is spent (of concurrent
 * uses one wins), the password set and the address verified, every session and single sign-on session of the
 * user ended, and `password_reset.completed` or `invitation.accepted` recorded.
 */
export async function setPasswordWithLink(
  sql: Sql,
  token: string,
  password: string,
  request: { ip: string | null; user_agent: string | null; id: string },
  /** PUBLIC_URL, for the notice mail of a reset (domain/accounts/notices.ts). */
  publicUrl: string,
): Promise<LinkRow> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) throw new LinkUnusable();
  const passwordHash = await hashPassword(password);
  return await transaction(sql, async (tx) => {
    const link = await consumeLink(tx, hashSecret(token), ["password_reset", "invitation"]);
    if (!link) throw new LinkUnusable();
    const { unlinked } = await setPasswordFromLink(tx, link.project_id, link.user_id, passwordHash);
    await endSessions(tx, { userId: link.user_id });
    // The owner of the mailbox chose a new password: failed guesses before it no longer hold the account back.
    await clearAttempts(tx, accountKey(link.project_id, link.email));
    await record(tx, {
      projectId: link.project_id,
      type: link.purpose === "invitation" ? "invitation.accepted" : "password_reset.completed",
      source: { actor: { type: "user", id: link.user_id, token_jti: null }, request },
      target: { type: "user", id: link.user_id },
      // `unlinked_providers`: identities linked while the address was unproven, unlinked now (db/events/mail.ts).
      details: { email: link.email, ...(unlinked.length > 0 ? { unlinked_providers: unlinked } : {}) },
    });
    if (link.purpose === "password_reset") {
      await mailNotice(tx, {
        projectId: link.project_id,
        userId: link.user_id,
        kind: "password_changed",
        source: { actor: { type: "user", id: link.user_id, token_jti: null }, request },
        publicUrl,
      });
    }
    return link;
  });
}

/** Verifies the address through its link: `email.verified`. */
export async function verifyWithLink(
  sql: Sql,
  token: string,
  request: { ip: string | null; user_agent: string | null; id: string },
): Promise<LinkRow> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) throw new LinkUnusable();
  return await transaction(sql, async (tx) => {
    const link = await consumeLink(tx, hashSecret(token), ["email_verification"]);
    if (!link || !(await verifyEmail(tx, link.project_id, link.user_id, link.email))) {
      throw new LinkUnusable();
    }
    await record(tx, {
      projectId: link.project_id,
      type: "email.verified",
      source: { actor: { type: "user", id: link.user_id, token_jti: null }, request },
      target: { type: "user", id: link.user_id },
      details: { email: link.email },
    });
    return link;
  });
}

/** Where a reset request comes from: the login page (its request, in this browser) or a project's page. */
export type ResetContext = { projectId: string; projectName: string; requestId: string | null };

/**
 * The project of a "Forgot your password?" page: from the login page's request when this browser opened it and
 * it is still open, else from `project_id` (the page a stale link offers). Null: neither names an active project.
 */
export async function resetContext(
  sql: Sql,
  from: { requestId?: string; projectId?: string },
  browserSecret: string | undefined,
  publicUrl: string,
): Promise<ResetContext | null> {
  if (from.requestId) {
    const req = await resumableRequest(sql, from.requestId, browserSecret, publicUrl);
    if (req) return { projectId: req.project_id, projectName: req.project_name, requestId: req.id };
  }
  if (from.projectId && from.projectId.length <= 100 && !from.projectId.includes("\0")) {
    const project = await findProjectName(sql, from.projectId);
    if (project?.is_active) return { projectId: from.projectId, projectName: project.name, requestId: null };
  }
  return null;
}

/** The login request, when it is still open, this browser's, and its client may still use it. */
export async function resumableRequest(
  sql: Sql,
  requestId: string,
  browserSecret: string | undefined,
  publicUrl: string,
): Promise<(AuthorizationRequestRow & { project_name: string }) | null> {
  if (!browserSecret || requestId.length > 100 || requestId.includes("\0")) return null;
  const req = await findAuthorizationRequest(sql, requestId);
  if (!req || req.used || req.expired || !secretMatches(browserSecret, req.browser_hash)) return null;
  const client = await findClientWithProject(sql, req.client_id);
  if (!client || !client.is_active || !client.project_is_active) return null;
  if (!redirectUriAllowed(client, req.redirect_uri, publicUrl)) return null;
  return { ...req, project_name: client.project_name };
}

/**
 * After a new password without a login page to continue: the browser is signed in to the project (a single
 * sign-on session under a new cookie value, which the next OpenID request of the project uses). Returns the
 * cookie value.
 */
export async function signInBrowser(
  sql: Sql,
  projectId: string,
  userId: string,
  browser: string | undefined,
  settings: { idleTtl: number; ttl: number },
): Promise<string> {
  const fresh = newSecret();
  await transaction(sql, async (tx) => {
    if (isBrowserSecret(browser)) await rekeyBrowser(tx, hashSecret(browser), hashSecret(fresh));
    await insertSsoSession(tx, {
      project_id: projectId,
      id: newId(),
      browser_hash: hashSecret(fresh),
      user_id: userId,
      idleSeconds: settings.idleTtl,
      ttlSeconds: settings.ttl,
    });
  });
  return fresh;
}

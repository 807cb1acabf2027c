/**
 * Mail: the outbox (claimed by workers of every instance with SKIP LOCKED, like webhook deliveries) and the
 * one-time links mailed to users (password reset, invitation, email verification), kept as hashes.
 */
import { retryConflict, type Sql } from "../connection.ts";

export type MailKind =
  | "password_reset"
  | "invitation"
  | "email_verification"
  | "email_changed"
  | "security_notice"
  | "signup_existing"
  | "organization_invitation";

export type OutboxMail = {
  project_id: string;
  id: string;
  kind: MailKind;
  to_address: string;
  user_id: string | null;
  params: Record<string, string>;
  link: string | null;
  link_sealed: Uint8Array | null;
};

export async function insertMail(sql: Sql, m: OutboxMail): Promise<void> {
  await sql`
    insert into mail_outbox (project_id, id, kind, to_address, user_id, params, link, link_sealed)
    values (${m.project_id}, ${m.id}, ${m.kind}, ${m.to_address}, ${m.user_id}, ${sql.json(m.params)},
            ${m.link}, ${m.link_sealed})`;
}

export type ClaimedMail = OutboxMail & { attempts: number };

/** Claims due mails (and mails whose worker died mid-send) for `leaseSeconds`; each claim counts an attempt. */
export async function claimMails(sql: Sql, limit: number, leaseSeconds: number): Promise<ClaimedMail[]> {
  return await retryConflict(sql, () =>
    sql<ClaimedMail[]>`
    with due as (
      select id from mail_outbox
      where (status = 'pending' or (status = 'sending' and locked_until < now())) and next_attempt_at <= now()
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    )
    update mail_outbox m
    set status = 'sending', attempts = m.attempts + 1, locked_until = now() + make_interval(secs => ${leaseSeconds})
    from due where m.id = due.id
    returning m.project_id, m.id, m.kind, m.to_address, m.user_id, m.params, m.link, m.link_sealed, m.attempts`);
}

/** Sent: the link it carried is forgotten. An outcome of a claim that was taken over changes nothing. */
export async function markMailSent(sql: Sql, claim: { id: string; attempts: number }): Promise<void> {
  await retryConflict(sql, () =>
    sql`
    update mail_outbox set status = 'sent', sent_at = now(), locked_until = null, last_error = null,
      link = null, link_sealed = null
    where id = ${claim.id} and status = 'sending' and attempts = ${claim.attempts}`);
}

/**
 * A failed attempt: another in `retryInSeconds`, or (null) given up, its link forgotten. Returns whether this
 * claim's outcome was recorded (false: another worker holds the mail now).
 */
export async function markMailFailed(
  sql: Sql,
  claim: { id: string; attempts: number },
  error: string,
  retryInSeconds: number | null,
): Promise<boolean> {
  const rows = await sql`
    update mail_outbox set
      status = ${retryInSeconds === null ? "failed" : "pending"},
      next_attempt_at = case when ${retryInSeconds}::float8 is null then next_attempt_at
                             else now() + make_interval(secs => ${retryInSeconds}::float8) end,
      last_error = ${error.slice(0, 500)}, locked_until = null,
      link = case when ${retryInSeconds}::float8 is null then null else link end,
      link_sealed = case when ${retryInSeconds}::float8 is null then null else link_sealed end
    where id = ${claim.id} and status = 'sending' and attempts = ${claim.attempts}
    returning id`;
  return rows.length === 1;
}

export type LinkPurpose = "password_reset" | "invitation" | "email_verification";

/** The SQL text of a user's password stamp: the SHA-256 of the password hash ('' without one), in hex. */
const STAMP = "encode(sha256(convert_to(coalesce(u.password_hash, ''), 'UTF8')), 'hex')";

export async function insertLink(
  sql: Sql,
  l: {
    project_id: string;
    id: string;
    user_id: string;
    purpose: LinkPurpose;
    token_hash: Uint8Array;
    email: string;
    authorization_request_id: string | null;
    ttlSeconds: number;
  },
): Promise<void> {
  await sql`
    insert into account_links
      (project_id, id, user_id, purpose, token_hash, email, password_stamp, authorization_request_id, expires_at)
    select ${l.project_id}, ${l.id}, ${l.user_id}, ${l.purpose}, ${l.token_hash}, ${l.email},
           ${sql.unsafe(STAMP)}, ${l.authorization_request_id}, now() + make_interval(secs => ${l.ttlSeconds})
    from users u where u.project_id = ${l.project_id} and u.id = ${l.user_id}`;
}

export type LinkRow = {
  id: string;
  project_id: string;
  project_name: string;
  user_id: string;
  purpose: LinkPurpose;
  email: string;
  authorization_request_id: string | null;
  /** Unused, unexpired, for the user's current address and password, the user and project active. */
  usable: boolean;
};

const LINK_COLUMNS = `l.id, l.project_id, p.name as project_name, l.user_id, l.purpose, l.email,
  l.authorization_request_id,
  (l.used_at is null and l.expires_at > now() and u.is_active and p.is_active
   and l.password_stamp = ${STAMP}
   and (u.email = l.email or (l.purpose = 'email_verification' and u.pending_email = l.email))) as usable`;

/** The link with this token hash, usable or not (the page tells a stale link from an unknown one). */
export async function findLink(sql: Sql, tokenHash: Uint8Array): Promise<LinkRow | undefined> {
  const [row] = await sql<LinkRow[]>`
    select ${sql.unsafe(LINK_COLUMNS)}
    from account_links l
    join users u on u.project_id = l.project_id and u.id = l.user_id
    join projects p on p.id = l.project_id
    where l.token_hash = ${tokenHash}`;
  return row;
}

/** Spends the link in one statement (of concurrent uses exactly one wins); undefined when it is not usable. */
export async function consumeLink(
  sql: Sql,
  tokenHash: Uint8Array,
  purposes: LinkPurpose[],
): Promise<LinkRow | undefined> {
  const [row] = await sql<LinkRow[]>`
    with spent as (
      update account_links l set used_at = now()
      from users u, projects p
      where l.token_hash = ${tokenHash} and l.purpose = any(${purposes}::text[])
        and u.project_id = l.project_id and u.id = l.user_id and p.id = l.project_id
        and l.used_at is null and l.expires_at > now() and u.is_active and p.is_active
        and l.password_stamp = ${sql.unsafe(STAMP)}
        and (u.email = l.email or (l.purpose = 'email_verification' and u.pending_email = l.email))
      returning l.id, l.project_id, p.name as project_name, l.user_id, l.purpose, l.email,
        l.authorization_request_id, true as usable
    )
    select * from spent`;
  return row;
}

/** Links of a user of this purpose that are not used yet end (a new one replaces them). */
export async function endLinks(
  sql: Sql,
  projectId: string,
  userId: string,
  purposes: LinkPurpose[],
): Promise<void> {
  await sql`
    update account_links set used_at = now()
    where project_id = ${projectId} and user_id = ${userId} and purpose = any(${purposes}::text[])
      and used_at is null`;
}

/** The user a mail goes to, with what the link and the mail need. */
export type MailUserRow = {
  id: string;
  project_id: string;
  project_name: string;
  project_active: boolean;
  display_name: string;
  email: string | null;
  email_verified: boolean;
  pending_email: string | null;
  is_active: boolean;
  has_password: boolean;
};

const MAIL_USER = (sql: Sql) =>
  sql`u.id, u.project_id, p.name as project_name, p.is_active as project_active, u.display_name, u.email,
      u.email_verified, u.pending_email, u.is_active, u.password_hash is not null as has_password`;

export async function findMailUserByEmail(
  sql: Sql,
  projectId: string,
  email: string,
): Promise<MailUserRow | undefined> {
  const [row] = await sql<MailUserRow[]>`
    select ${MAIL_USER(sql)} from users u join projects p on p.id = u.project_id
    where u.project_id = ${projectId} and u.email = ${email}`;
  return row;
}

export async function findMailUser(
  sql: Sql,
  projectId: string,
  userId: string,
  lock = false,
): Promise<MailUserRow | undefined> {
  const [row] = await sql<MailUserRow[]>`
    select ${MAIL_USER(sql)} from users u join projects p on p.id = u.project_id
    where u.project_id = ${projectId} and u.id = ${userId} ${lock ? sql`for update of u` : sql``}`;
  return row;
}

/**
 * Sets the password (and proves the address); the stamp changes, so every other link dies. When the address was
 * not proven before, the identities linked to the account are unlinked too: someone who signed in through a
 * provider that does not verify addresses may have made the account under this address, and the mailbox's
 * owner, who takes it over now, must not share it with them.
 */
export async function setPasswordFromLink(
  sql: Sql,
  projectId: string,
  userId: string,
  passwordHash: string,
): Promise<{ unlinked: string[] }> {
  const [row] = await sql<{ unlinked: string[] }[]>`
    with unproven as (
      delete from external_identities x
      using users u
      where u.project_id = ${projectId} and u.id = ${userId} and not u.email_verified
        and x.project_id = u.project_id and x.user_id = u.id
      returning x.provider_id
    ),
    updated as (
      update users set password_hash = ${passwordHash}, email_verified = true, updated_at = now()
      where project_id = ${projectId} and id = ${userId}
    )
    select coalesce(array_agg(provider_id order by provider_id), '{}') as unlinked from unproven`;
  return row;
}

/**
 * Marks the address verified when it is still the user's address, or the pending one (which then becomes the
 * address, unless another user of the project has taken it meanwhile); false otherwise.
 */
export async function verifyEmail(
  sql: Sql,
  projectId: string,
  userId: string,
  email: string,
): Promise<boolean> {
  const rows = await sql`
    update users u set email = ${email}, pending_email = null, email_verified = true, updated_at = now()
    where u.project_id = ${projectId} and u.id = ${userId} and (u.email = ${email} or u.pending_email = ${email})
      and not exists (
        select 1 from users o where o.project_id = ${projectId} and o.email = ${email} and o.id <> ${userId})
    returning u.id`;
  return rows.length === 1;
}

export async function findProjectName(
  sql: Sql,
  projectId: string,
): Promise<{ name: string; is_active: boolean } | undefined> {
  const [row] = await sql<{ name: string; is_active: boolean }[]>`
    select name, is_active from projects where id = ${projectId}`;
  return row;
}

/** Keeps a login page open as long as the reset link asked from it works. */
export async function extendAuthorizationRequest(sql: Sql, id: string, seconds: number): Promise<void> {
  await sql`
    update authorization_requests set expires_at = greatest(expires_at, now() + make_interval(secs => ${seconds}))
    where id = ${id} and used_at is null and expires_at > now()`;
}

/** The login page's user must verify their address first: its page may mail them the link. */
export async function holdForVerification(sql: Sql, requestId: string, userId: string): Promise<void> {
  await sql`update authorization_requests set unverified_user_id = ${userId} where id = ${requestId}`;
}

/** The user a login page refused for an unverified address, when it did. */
export async function unverifiedUserOf(sql: Sql, requestId: string): Promise<MailUserRow | undefined> {
  const [row] = await sql<MailUserRow[]>`
    select ${MAIL_USER(sql)} from authorization_requests r
    join users u on u.project_id = r.project_id and u.id = r.unverified_user_id
    join projects p on p.id = u.project_id
    where r.id = ${requestId}`;
  return row;
}

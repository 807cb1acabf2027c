/** Queries of second factors: a user's TOTP authenticator and recovery codes, and the login awaiting one. */
import type { Sql } from "../connection.ts";

export type TotpRow = {
  secret: string | null;
  secret_sealed: Uint8Array | null;
  last_step: number | null;
  confirmed: boolean;
  /** An enrolment started more than 15 minutes ago (by the database's clock): no longer confirmable. */
  stale: boolean;
};

/** The user's authenticator, confirmed or under enrolment. */
export async function findTotp(sql: Sql, projectId: string, userId: string): Promise<TotpRow | undefined> {
  const [row] = await sql<TotpRow[]>`
    select secret, secret_sealed, last_step::float8 as last_step, confirmed_at is not null as confirmed,
      confirmed_at is null and created_at < now() - interval '15 minutes' as stale
    from totp_factors where project_id = ${projectId} and user_id = ${userId}`;
  return row;
}

/** Starts an enrolment: a new secret, replacing any enrolment under way but never a confirmed authenticator. */
export async function upsertPendingTotp(
  sql: Sql,
  t: { project_id: string; user_id: string; secret: string | null; secret_sealed: Uint8Array | null },
): Promise<boolean> {
  const rows = await sql`
    insert into totp_factors (project_id, user_id, secret, secret_sealed)
    values (${t.project_id}, ${t.user_id}, ${t.secret}, ${t.secret_sealed})
    on conflict (project_id, user_id) do update
      set secret = excluded.secret, secret_sealed = excluded.secret_sealed, last_step = null, created_at = now()
      where totp_factors.confirmed_at is null
    returning user_id`;
  return rows.length === 1;
}

/**
 * Spends the code of `step`: true when no code of this step or a later one was accepted before (in one
 * statement, so that of two concurrent uses of one code exactly one wins). `confirm` completes an enrolment.
 */
export async function useTotpStep(
  sql: Sql,
  projectId: string,
  userId: string,
  step: number,
  confirm: boolean,
): Promise<boolean> {
  const rows = await sql`
    update totp_factors set last_step = ${step},
      confirmed_at = ${confirm ? sql`coalesce(confirmed_at, now())` : sql`confirmed_at`}
    where project_id = ${projectId} and user_id = ${userId}
      and (last_step is null or last_step < ${step})
      and ${confirm ? sql`confirmed_at is null` : sql`confirmed_at is not null`}
    returning user_id`;
  return rows.length === 1;
}

export async function deleteTotp(sql: Sql, projectId: string, userId: string): Promise<boolean> {
  const rows = await sql`
    delete from totp_factors where project_id = ${projectId} and user_id = ${userId} and confirmed_at is not null
    returning user_id`;
  return rows.length === 1;
}

/** Replaces the user's recovery codes (spent ones included) with these hashes. */
export async function replaceRecoveryCodes(
  sql: Sql,
  projectId: string,
  userId: string,
  hashes: Uint8Array[],
): Promise<void> {
  await sql`delete from recovery_codes where project_id = ${projectId} and user_id = ${userId}`;
  for (const hash of hashes) {
    await sql`insert into recovery_codes (project_id, user_id, code_hash) values (${projectId}, ${userId}, ${hash})`;
  }
}

export async function deleteRecoveryCodes(sql: Sql, projectId: string, userId: string): Promise<void> {
  await sql`delete from recovery_codes where project_id = ${projectId} and user_id = ${userId}`;
}

/** Spends one recovery code; returns how many remain unspent, or null when it is not an unspent code. */
export async function useRecoveryCode(
  sql: Sql,
  projectId: string,
  userId: string,
  hash: Uint8Array,
): Promise<number | null> {
  const [row] = await sql<{ remaining: number }[]>`
    with spent as (
      update recovery_codes set used_at = now()
      where project_id = ${projectId} and user_id = ${userId} and code_hash = ${hash} and used_at is null
      returning code_hash
    )
    select (select count(*) from recovery_codes r where r.project_id = ${projectId} and r.user_id = ${userId}
              and r.used_at is null and r.code_hash not in (select code_hash from spent))::int as remaining
    from spent`;
  return row ? row.remaining : null;
}

export type FactorSummary = {
  totp: boolean;
  totp_confirmed_at: Date | null;
  recovery_codes_left: number;
  passkeys: number;
};

/** What second factors the user has. */
export async function factorSummary(sql: Sql, projectId: string, userId: string): Promise<FactorSummary> {
  const [row] = await sql<FactorSummary[]>`
    select exists (select 1 from totp_factors t where t.project_id = ${projectId} and t.user_id = ${userId}
                     and t.confirmed_at is not null) as totp,
           (select t.confirmed_at from totp_factors t where t.project_id = ${projectId}
              and t.user_id = ${userId}) as totp_confirmed_at,
           (select count(*) from recovery_codes r where r.project_id = ${projectId} and r.user_id = ${userId}
              and r.used_at is null)::int as recovery_codes_left,
           (select count(*) from passkeys k where k.project_id = ${projectId} and k.user_id = ${userId})::int
             as passkeys`;
  return row;
}

/**
 * The login request awaits the second factor of this user (after a right password, `amr` so far), through
 * `providerId` when an upstream provider signed them in (undefined: the one already kept stays).
 */
export async function awaitSecondFactor(
  sql: Sql,
  requestId: string,
  userId: string,
  amr: string[],
  providerId?: string | null,
): Promise<void> {
  const provider = providerId === undefined ? sql`mfa_provider_id` : sql`${providerId}`;
  await sql`update authorization_requests set mfa_user_id = ${userId}, mfa_amr = ${amr},
              mfa_provider_id = ${provider}
            where id = ${requestId} and used_at is null`;
}

/** The user, methods and upstream provider a login request awaits a second factor for, if it does. */
export async function pendingSecondFactor(
  sql: Sql,
  requestId: string,
): Promise<{ user_id: string; amr: string[]; provider_id: string | null } | undefined> {
  const [row] = await sql<{ user_id: string; amr: string[]; provider_id: string | null }[]>`
    select mfa_user_id as user_id, mfa_amr as amr, mfa_provider_id as provider_id from authorization_requests
    where id = ${requestId} and mfa_user_id is not null and used_at is null and expires_at > now()`;
  return row;
}

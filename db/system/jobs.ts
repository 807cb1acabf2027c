/** Leases of background jobs: one instance runs a job at a time, and another takes over when it stops renewing. */
import type { Sql } from "../connection.ts";

/** Takes or renews the lease on `name` for `seconds`; false when another instance holds it. */
export async function takeLease(sql: Sql, name: string, holder: string, seconds: number): Promise<boolean> {
  const rows = await sql`
    insert into job_leases as l (name, holder, expires_at)
    values (${name}, ${holder}, now() + make_interval(secs => ${seconds}))
    on conflict (name) do update set holder = ${holder}, expires_at = now() + make_interval(secs => ${seconds})
    where l.holder = ${holder} or l.expires_at < now()
    returning 1`;
  return rows.length === 1;
}

/** Lets the lease go at shutdown, so that another instance takes the job over at once. */
export async function releaseLease(sql: Sql, name: string, holder: string): Promise<void> {
  await sql`delete from job_leases where name = ${name} and holder = ${holder}`;
}

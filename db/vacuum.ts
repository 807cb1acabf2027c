/**
 * VACUUM and ANALYZE for the embedded database, which has no autovacuum: PGlite runs PostgreSQL in single-user
 * mode, where the autovacuum launcher never starts. Without it the tables' dead rows and their index entries
 * stay, the planner never learns the tables' sizes, and, worse, no row is ever frozen: single-user mode only
 * warns as transaction ids near wraparound, so after about 2^31 writes the oldest rows (the system project, its
 * clients and keys) would turn invisible. A PostgreSQL server runs autovacuum itself; this is only for PGlite.
 *
 * It takes autovacuum's own rules, with its default settings: a table is vacuumed when its dead rows pass
 * 50 + 20 % of its rows, its rows inserted since the last vacuum 1,000 + 20 % (so that their pages get marked
 * all-visible), or its oldest unfrozen transaction id is older than FREEZE_AGE (then with FREEZE); analyzed
 * when its changes since the last analyze pass 50 + 10 %. Catalog tables count too: freezing is per table.
 * Multixact ids (row locks shared by transactions, savepoints included) age and are frozen alike.
 *
 * What it cannot reach: the template databases (template0, template1) of the cluster, which a session on the
 * service's database cannot vacuum. Nothing reads them, so no row of theirs can be lost that matters here; but
 * as the cluster's oldest they keep PostgreSQL from truncating its transaction-status files (2 bits per write
 * transaction, at most 512 MB), and after 2^31 write transactions from the database's creation PostgreSQL
 * warns at every write about them (a notice, which the driver drops).
 */
import type { Sql } from "./connection.ts";

/** Autovacuum's `vacuum_freeze_table_age`: past it, a table's VACUUM scans all of it and freezes. */
export const FREEZE_AGE = 150_000_000;

export type Maintained = { table: string; vacuum: boolean; freeze: boolean; analyze: boolean };

/**
 * Vacuums and analyzes, one table at a time, the tables that are due (above), oldest transaction ids first.
 * Each statement holds the embedded database's one session while it runs, as any statement does. `signal`
 * stops it between two tables (the service is stopping). A table that fails (dropped meanwhile) does not stop
 * the others; the first failure is thrown once all are done, for the job's log.
 */
export async function vacuumDue(
  sql: Sql,
  opts: { freezeAge?: number; signal?: AbortSignal } = {},
): Promise<Maintained[]> {
  const freezeAge = opts.freezeAge ?? FREEZE_AGE;
  // pg_statistic is written by every ANALYZE, so it would always look changed; ANALYZE skips it anyway.
  const due = await sql<Maintained[]>`
    select name as "table", dead or old as vacuum, old as freeze, changed as "analyze" from (
      select c.oid::regclass::text as name, greatest(age(c.relfrozenxid), mxid_age(c.relminmxid)) as age,
             s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
               or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0) as dead,
             age(c.relfrozenxid) > ${freezeAge}::int or mxid_age(c.relminmxid) > ${freezeAge}::int as old,
             s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
               and c.oid <> 'pg_catalog.pg_statistic'::regclass as changed
      from pg_class c join pg_stat_all_tables s on s.relid = c.oid
      where c.relkind in ('r', 'm') and c.relpersistence <> 't'
    ) t
    where dead or old or changed
    order by age desc`;
  const done: Maintained[] = [];
  let failure: unknown;
  for (const t of due) {
    if (opts.signal?.aborted) break;
    // `table` is the table's own name from the catalog as regclass writes it (quoted, schema-qualified where
    // it must be), never input.
    const options = [t.freeze && "freeze", t.analyze && "analyze"].filter(Boolean).join(", ");
    const statement = t.vacuum ? `vacuum ${options ? `(${options}) ` : ""}${t.table}` : `analyze ${t.table}`;
    try {
      await sql.unsafe(statement);
      done.push(t);
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure !== undefined) throw failure;
  return done;
}

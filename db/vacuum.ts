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
 */
import type { Sql } from "./connection.ts";

/** Autovacuum's `vacuum_freeze_table_age`: past it, a table's VACUUM scans all of it and freezes. */
export const FREEZE_AGE = 150_000_000;

export type Maintained = { table: string; vacuum: boolean; freeze: boolean; analyze: boolean };

/**
 * Vacuums and analyzes, one table at a time, the tables that are due (above), oldest transaction ids first.
 * Each statement holds the embedded database's one session while it runs, as any statement does.
 */
export async function vacuumDue(sql: Sql, opts: { freezeAge?: number } = {}): Promise<Maintained[]> {
  const freezeAge = opts.freezeAge ?? FREEZE_AGE;
  const due = await sql<{ name: string; vacuum: boolean; freeze: boolean; analyze: boolean }[]>`
    select name, dead or old as vacuum, old as freeze, changed as "analyze" from (
      select c.oid::regclass::text as name, age(c.relfrozenxid) as age,
             s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
               or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0) as dead,
             age(c.relfrozenxid) > ${freezeAge}::int as old,
             s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0) as changed
      from pg_class c join pg_stat_all_tables s on s.relid = c.oid
      where c.relkind in ('r', 'm') and c.relpersistence = 'p'
    ) t
    where dead or old or changed
    order by age desc`;
  const done: Maintained[] = [];
  for (const t of due) {
    // `name` is the table's own name from the catalog as regclass writes it (quoted where it must be).
    const options = [t.freeze && "freeze", t.analyze && "analyze"].filter(Boolean).join(", ");
    const statement = t.vacuum ? `vacuum ${options ? `(${options}) ` : ""}${t.name}` : `analyze ${t.name}`;
    await sql.unsafe(statement);
    done.push({ table: t.name, vacuum: t.vacuum, freeze: t.freeze, analyze: t.analyze });
  }
  return done;
}

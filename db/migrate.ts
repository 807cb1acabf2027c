/** Forward-only migrator: db/migrations/NNNN_name.sql, applied in order in one transaction under an advisory lock. */
import { type Sql, transaction } from "./connection.ts";

/** Any fixed number; every instance takes the same lock, so two starting together apply migrations once. */
export const SCHEMA_LOCK = 72_616_001;

type Migration = { version: number; name: string; sql: string };

export async function readMigrations(): Promise<Migration[]> {
  const dir = new URL("./migrations/", import.meta.url);
  const found: Migration[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(entry.name);
    if (!entry.isFile || !m) continue;
    found.push({ version: Number(m[1]), name: m[2], sql: await Deno.readTextFile(new URL(entry.name, dir)) });
  }
  return found.sort((a, b) => a.version - b.version);
}

/** Applies what is missing and returns the versions it applied. */
export async function migrate(sql: Sql): Promise<number[]> {
  const migrations = await readMigrations();
  return await transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    await tx`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
    const done = new Set(
      (await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version),
    );
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
    return applied;
  });
}

/**
 * What keeping the embedded database's file sizes in the process (db/embedded_files.ts) saves: the same statements
 * of an admin write (a gated read of the caller, an update of a role, its audit event, a list page) on two PGlite
 * databases in this process, one with the sizes kept and one without, alternated round by round so that both
 * see the same machine. Prints the CPU time of one such write on each, the median of the rounds.
 *
 *   deno run --allow-read --allow-write --allow-env --allow-sys bench/file_sizes.ts
 *
 * FILE_SIZES_ROUNDS (default 5) rounds of FILE_SIZES_WRITES (default 800) writes on each.
 */
import { join } from "node:path";
import process from "node:process";
import { PGlite } from "@electric-sql/pglite";
import { keepFileSizes } from "../db/embedded_files.ts";

const ROUNDS = Number(Deno.env.get("FILE_SIZES_ROUNDS") ?? 5);
const WRITES = Number(Deno.env.get("FILE_SIZES_WRITES") ?? 800);

async function open(dir: string, kept: boolean): Promise<PGlite> {
  const db = await PGlite.create(join(dir, "pgdata"));
  if (kept && !keepFileSizes(db)) throw new Error("the file sizes could not be kept with this PGlite");
  await db.exec(`
    create table principals (project_id int not null, id int not null, active boolean not null,
      primary key (project_id, id));
    create table roles (project_id int not null, id int not null, code text not null, name text not null,
      updated_at timestamptz not null default now(), primary key (project_id, id));
    create unique index roles__project_id_code on roles (project_id, code);
    create table events (id bigserial primary key, project_id int not null, kind text not null,
      body jsonb not null, at timestamptz not null default now());
    create index events__project_id_at on events (project_id, at);
    insert into principals select p, i, true from generate_series(1, 20) p, generate_series(1, 50) i;
    insert into roles select p, i, 'role-' || i, 'Role ' || i from generate_series(1, 20) p, generate_series(1, 100) i;
    analyze`);
  return db;
}

/** One admin write as the service makes it: the caller's check, the change and its event, then a list page. */
async function write(db: PGlite, n: number): Promise<void> {
  const project = 1 + n % 20;
  const role = 1 + n % 100;
  await db.query("select active from principals where project_id = $1 and id = $2", [project, 1 + n % 50]);
  await db.transaction(async (tx) => {
    await tx.query("update roles set name = $3, updated_at = now() where project_id = $1 and id = $2", [
      project,
      role,
      `Role ${role} ${n}`,
    ]);
    await tx.query("insert into events (project_id, kind, body) values ($1, 'role.updated', $2)", [
      project,
      JSON.stringify({ role, n }),
    ]);
  });
  await db.query("select id, code, name from roles where project_id = $1 order by code limit 10", [project]);
}

const dirs = [
  await Deno.makeTempDir({ prefix: "acs-sizes-" }),
  await Deno.makeTempDir({ prefix: "acs-sizes-" }),
];
const kept = await open(dirs[0], true);
const asked = await open(dirs[1], false);
try {
  const times: Record<"kept" | "asked", number[]> = { kept: [], asked: [] };
  let n = 0;
  for (let warm = 0; warm < 300; warm++) await Promise.all([write(kept, n), write(asked, n++)]);
  for (let round = 0; round < ROUNDS; round++) {
    for (
      const [name, db]
        of (round % 2 ? [["asked", asked], ["kept", kept]] : [["kept", kept], ["asked", asked]]) as [
          "kept" | "asked",
          PGlite,
        ][]
    ) {
      // This process's CPU time, not the clock's: on a shared machine the clock counts others' work too.
      const t0 = process.cpuUsage();
      for (let i = 0; i < WRITES; i++) await write(db, n + i);
      const { user, system } = process.cpuUsage(t0);
      times[name].push((user + system) / WRITES);
    }
    n += WRITES;
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const k = median(times.kept);
  const a = median(times.asked);
  console.log(
    `one admin write's statements on PGlite, median of ${ROUNDS} rounds of ${WRITES}: ` +
      `${a.toFixed(0)} µs of CPU with each size asked of the file, ${k.toFixed(0)} µs with the sizes kept ` +
      `(${((1 - k / a) * 100).toFixed(1)} % less)`,
  );
} finally {
  await kept.close();
  await asked.close();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true });
}

/** First start: the system project, its admin client and the first signing key, created once under a lock. */
import { type Sql, transaction } from "../db/connection.ts";
import { findProject } from "../db/projects.ts";
import { SCHEMA_LOCK } from "../db/migrate.ts";
import { createProject, SYSTEM_ADMIN_CLIENT_ID, SYSTEM_PROJECT_ID } from "./projects.ts";
import { ensureSigningKey } from "./tokens.ts";

export type BootstrapResult = { created: false } | { created: true; secret: string; generated: boolean };

export async function bootstrap(sql: Sql, adminSecret?: string): Promise<BootstrapResult> {
  return await transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    await ensureSigningKey(tx);
    if (await findProject(tx, SYSTEM_PROJECT_ID)) return { created: false };
    // createProject opens a savepoint inside this transaction, so the lock covers it.
    const project = await createProject(tx, {
      name: "System",
      description: "Administers the other projects",
    }, { id: SYSTEM_PROJECT_ID, adminClientId: SYSTEM_ADMIN_CLIENT_ID, adminSecret });
    return {
      created: true,
      secret: project.admin_client.client_secret,
      generated: adminSecret === undefined,
    };
  });
}

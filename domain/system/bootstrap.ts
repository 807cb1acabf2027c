/**
 * At every start, under one lock: the signing keys (sealed, proven, made on a first start), the default
 * resources of every project, and on a first start the system project with its admin client.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { SCHEMA_LOCK } from "../../db/migrate.ts";
import { findProject } from "../../db/projects/projects.ts";
import { SYSTEM_ADMIN_CLIENT_ID, SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { SYSTEM } from "../audit/audit.ts";
import { syncDefaultResources } from "../authz/defaults.ts";
import { ensureFirstOperator, type FirstOperator } from "./first_operator.ts";
import { type KeySettings, prepareKeys } from "../keys/keys.ts";
import { createProject } from "../projects/projects.ts";

export type BootstrapResult = {
  created: boolean;
  /** The system admin client's secret, on a first start. */
  secret?: string;
  generated?: boolean;
  /** Projects where a resource of their own has a default resource's code, so the default is missing there. */
  clashes: string[];
  /** The console's first operator: made now (BOOTSTRAP_ADMIN_EMAIL), or a setup link while none can sign in. */
  operator: FirstOperator;
};

export async function bootstrap(
  sql: Sql,
  adminSecret: string | undefined,
  keys: KeySettings,
  /** `link`: make a setup link when no operator can sign in (a start that prints it). */
  operator: { email?: string; password?: string; link?: boolean } = {},
): Promise<BootstrapResult> {
  const result = await transaction(sql, async (tx): Promise<Omit<BootstrapResult, "operator">> => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    await prepareKeys(tx, keys);
    if (await findProject(tx, SYSTEM_PROJECT_ID)) {
      return { created: false, clashes: await syncDefaultResources(tx, SYSTEM_PROJECT_ID) };
    }
    // createProject opens a savepoint inside this transaction, so the lock covers it.
    const project = await createProject(tx, SYSTEM, {
      name: "System",
      description: "Administers the other projects",
    }, { id: SYSTEM_PROJECT_ID, adminClientId: SYSTEM_ADMIN_CLIENT_ID, adminSecret });
    return {
      created: true,
      secret: project.admin_client.client_secret,
      generated: adminSecret === undefined,
      clashes: [],
    };
  });
  // After the system project exists; a start that finds the user already there changes nothing.
  return {
    ...result,
    operator: await ensureFirstOperator(sql, operator.email, operator.password, { link: operator.link }),
  };
}

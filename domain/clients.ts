/** Machine clients: created with a secret shown once, granted permissions directly, rotated, deactivated. */
import { type Sql, transaction } from "../db/connection.ts";
import {
  type ClientRow,
  type ClientSortField,
  findClient,
  insertClient,
  listClients as listClientRows,
  setClientPermissions,
  updateClientRow,
  updateClientSecret,
} from "../db/clients.ts";
import type { Page, Sort } from "../db/lists.ts";
import { AppError } from "./errors.ts";
import { newId, newSecret } from "./ids.ts";
import { type PageOut, pageResult } from "./pages.ts";
import { checkPermissionIds } from "./permissions.ts";
import { hashSecret } from "./secrets.ts";

export type ClientInput = {
  name: string;
  description?: string | null;
  permission_ids?: string[];
  is_active?: boolean;
};

export type ClientRecord = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  is_active: boolean;
  is_admin: boolean;
  permission_ids: string[];
  created_at: string;
  updated_at: string;
};

export function clientRecord(row: ClientRow): ClientRecord {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description,
    is_active: row.is_active,
    is_admin: row.is_admin,
    permission_ids: row.permission_ids,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function createClient(
  sql: Sql,
  projectId: string,
  input: ClientInput,
): Promise<ClientRecord & { client_secret: string }> {
  const id = newId();
  const secret = newSecret();
  return await transaction(sql, async (tx) => {
    const permissionIds = await checkPermissionIds(tx, projectId, input.permission_ids ?? []);
    await insertClient(tx, {
      project_id: projectId,
      id,
      name: input.name,
      description: input.description || null,
      secret_hash: hashSecret(secret),
      is_active: input.is_active ?? true,
    });
    await setClientPermissions(tx, projectId, id, permissionIds);
    return { ...clientRecord((await findClient(tx, projectId, id))!), client_secret: secret };
  });
}

/**
 * Updates the client; given `permission_ids` replace its grants, omitted ones leave them. Deactivation
 * refuses the client's tokens from the next request on, for good: reactivating does not revive them. A
 * project's admin client can be neither deactivated nor stripped of its permissions, so that no project
 * (and not the system project) can lock its operators out; rotate its secret instead.
 */
export async function updateClient(
  sql: Sql,
  projectId: string,
  clientId: string,
  input: ClientInput & { is_active: boolean },
): Promise<ClientRecord> {
  return await transaction(sql, async (tx) => {
    const current = await findClient(tx, projectId, clientId, { lock: true });
    if (!current) throw new AppError("client_not_found");
    if (current.is_admin) {
      if (!input.is_active) {
        throw new AppError("invalid_params", {
          details: [{ field: "is_active", issue: "the project's admin client cannot be deactivated" }],
        });
      }
      if (input.permission_ids !== undefined) {
        throw new AppError("invalid_params", {
          details: [{
            field: "permission_ids",
            issue: "the project's admin client's permissions cannot be changed",
          }],
        });
      }
    }
    const permissionIds = input.permission_ids === undefined
      ? undefined
      : await checkPermissionIds(tx, projectId, input.permission_ids);
    await updateClientRow(tx, projectId, clientId, {
      name: input.name,
      description: input.description === undefined ? current.description : input.description || null,
      is_active: input.is_active,
    });
    if (permissionIds) await setClientPermissions(tx, projectId, clientId, permissionIds);
    return clientRecord((await findClient(tx, projectId, clientId))!);
  });
}

/**
 * Replaces the client's secret; the old one stops working at once, and so do the access tokens issued
 * before. The new one is shown only here.
 */
export async function rotateClientSecret(
  sql: Sql,
  projectId: string,
  clientId: string,
): Promise<ClientRecord & { client_secret: string }> {
  const secret = newSecret();
  if (!(await updateClientSecret(sql, projectId, clientId, hashSecret(secret)))) {
    throw new AppError("client_not_found");
  }
  const row = await findClient(sql, projectId, clientId);
  return { ...clientRecord(row!), client_secret: secret };
}

export async function listClients(
  sql: Sql,
  projectId: string,
  q: Page & Sort<ClientSortField> & { search?: string; is_active?: boolean },
): Promise<PageOut<ClientRecord>> {
  return pageResult(q, await listClientRows(sql, projectId, q), clientRecord);
}

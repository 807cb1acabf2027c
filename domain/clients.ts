/** Machine clients: records and secret rotation (the rest of the clients API arrives with the admin API). */
import type { Sql } from "../db/connection.ts";
import { type ClientRow, findClient, updateClientSecret } from "../db/clients.ts";
import { AppError } from "./errors.ts";
import { newSecret } from "./ids.ts";
import { hashSecret } from "./secrets.ts";

export type ClientRecord = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  is_active: boolean;
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
    permission_ids: row.permission_ids,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Replaces the client's secret; the old one stops working at once. The new one is shown only here. */
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

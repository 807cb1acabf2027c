/**
 * The agents acting for a user (token exchange, domain/oauth/grants/token_exchange.ts), as the user's account page
 * shows them, and their revocation: every live token exchanged for the user in whose chain the agent acts is
 * refused from the next request on, on every instance (the gate reads each such token's row).
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { type ActingAgent, listActingAgents, revokeActingAgent } from "../../db/oauth/delegated_tokens.ts";
import { record, type Source } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";

export type { ActingAgent };

export async function actingAgents(sql: Sql, projectId: string, userId: string): Promise<ActingAgent[]> {
  return await retryRead(() => listActingAgents(sql, projectId, userId));
}

/** Ends what the agent holds for the user; `client_not_found` when it holds nothing for them. */
export async function revokeAgent(
  sql: Sql,
  projectId: string,
  userId: string,
  clientId: string,
  source: Source,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const ended = await revokeActingAgent(tx, projectId, userId, clientId);
    if (ended === 0) {
      throw new AppError("client_not_found", { description: "this agent acts for nobody here" });
    }
    await record(tx, {
      projectId,
      type: "delegation.revoked",
      source,
      target: { type: "user", id: userId },
      details: { client_id: clientId, tokens: ended },
    });
  });
}

/**
 * Claims from decisions (the AuthZEN IdP scenario, docs/authzen.md): a client names up to 3 resource searches
 * whose answers go into its users' access and ID tokens. Checked when written (codes of the project, a caller
 * that may publish search answers); answered when a user's tokens are issued, from the live model.
 */
import type { Sql } from "../../db/connection.ts";
import { findResourceCodes } from "../../db/authz/resources.ts";
import { subjectNameOf } from "../../db/accounts/users.ts";
import { type DecisionClaim, MAX_DECISION_CLAIM_IDS } from "../../openapi/clients.ts";
import { searchResourcesOf } from "../authz/authzen_search.ts";
import { requireCovered } from "../authz/coverage.ts";
import { AppError } from "../shared/errors.ts";
import type { Principal } from "../shared/principal.ts";

/**
 * The list as stored: each `resource_type` and `action` a code of the project (400 `invalid_params` naming
 * `decision_claims.<i>.<field>` otherwise), spelt as the project spells it. A list that differs from `before`
 * and names any search needs a caller that holds `access:search` outright (403 `insufficient_permission`): it
 * publishes that search's answers to whoever holds the client's tokens.
 */
export async function checkDecisionClaims(
  tx: Sql,
  caller: Principal,
  projectId: string,
  before: DecisionClaim[],
  asked: DecisionClaim[],
): Promise<DecisionClaim[]> {
  const found = await findResourceCodes(tx, projectId, asked.map((c) => c.resource_type));
  const byCode = new Map(found.map((r) => [r.code.toLowerCase(), r]));
  const details: { field: string; issue: string }[] = [];
  const list = asked.map((c, i) => {
    const resource = byCode.get(c.resource_type.toLowerCase());
    if (!resource) {
      details.push({
        field: `decision_claims.${i}.resource_type`,
        issue: "no resource of this project has this code",
      });
      return c;
    }
    const action = resource.permission_codes.find((p) => p.toLowerCase() === c.action.toLowerCase());
    if (action === undefined) {
      details.push({
        field: `decision_claims.${i}.action`,
        issue: `no permission of ${resource.code} has this code`,
      });
      return c;
    }
    return { claim: c.claim, resource_type: resource.code, action };
  });
  if (details.length > 0) throw new AppError("invalid_params", { details });
  if (list.length > 0 && !sameClaims(list, before)) {
    await requireCovered(
      tx,
      caller,
      projectId,
      { codes: ["access:search"] },
      "decision_claims",
      "setting a client's decision_claims",
    );
  }
  return list;
}

/** Field by field: the stored list comes back from jsonb with its keys in another order. */
const sameClaims = (a: DecisionClaim[], b: DecisionClaim[]) =>
  a.length === b.length &&
  a.every((c, i) =>
    c.claim === b[i].claim && c.resource_type === b[i].resource_type && c.action === b[i].action
  );

/**
 * The claims of a user's tokens for a client with decision claims: each the ids the resource search answers for
 * the user now (its first page of MAX_DECISION_CLAIM_IDS, sorted as the search sorts), and `claims_truncated`
 * naming those that had more. Empty for a client with none.
 */
export async function decisionClaimsOf(
  sql: Sql,
  projectId: string,
  userId: string,
  claims: DecisionClaim[] | null,
): Promise<Record<string, string[]>> {
  if (claims === null || claims.length === 0) return {};
  // Named as the application names the user, so that conditions comparing `subject.id` with its stored ids
  // answer as its decisions do.
  const name = await subjectNameOf(sql, projectId, userId);
  const answers = await Promise.all(claims.map(async (c) => {
    try {
      return await searchResourcesOf(sql, projectId, {
        subject: { type: "user", id: name },
        action: { name: c.action },
        resource: { type: c.resource_type },
        page: { limit: MAX_DECISION_CLAIM_IDS },
      });
    } catch (err) {
      // A search through conditions past its time: the claim is cut (empty), never the token refused.
      if (err instanceof AppError && err.code === "invalid_params") return null;
      throw err;
    }
  }));
  const out: Record<string, string[]> = {};
  answers.forEach((a, i) => out[claims[i].claim] = a?.results.map((r) => r.id) ?? []);
  // Cut when the search has a next page: its own "there is more", which stays exact even where its `total`
  // is read rather than counted.
  const truncated = claims.filter((_, i) => answers[i] === null || answers[i].page.next_token !== "")
    .map((c) => c.claim);
  return truncated.length > 0 ? { ...out, claims_truncated: truncated } : out;
}

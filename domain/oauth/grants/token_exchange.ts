/**
 * Token exchange (RFC 8693): a client whose `delegation` is on presents a live access token of a user or a client
 * of its project (`subject_token`) and gets an access token for that subject with itself named as the actor
 * (`act`, §4.1; nested when the subject token was itself exchanged, at most 5 deep). The new token holds the
 * intersection of what the subject holds, what every actor's delegation has, and what was asked (`scope`, or
 * for one API `resource`), decided again on every request (db/authz/principals.ts): it dies with the subject
 * token, its session, its user or client, any actor, and any change of a delegation. It never outlives the
 * subject token. Impersonation (a token without `act`) is not offered.
 */
import { retryRead, transaction } from "../../../db/connection.ts";
import {
  type DelegatedRow,
  type DelegatedToken,
  type ExchangeablePermission,
  exchangeablePermissions,
  exchangeBlock,
  findDelegatedToken,
  insertDelegatedToken,
} from "../../../db/oauth/delegated_tokens.ts";
import { findIndicatorTarget } from "../../../db/oauth/resource_indicators.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import { clientSource, record } from "../../audit/audit.ts";
import { issuedAt, liveToken } from "../../authz/gate.ts";
import { type Actor, holderOf, type VerifiedClaims } from "../../keys/tokens.ts";
import { AppError } from "../../shared/errors.ts";
import { authenticateClient } from "../client_auth.ts";
import { formIndicator } from "../resource_indicators.ts";
import { type GrantContext, required, requireSecondFactorIn } from "./grant.ts";
import { requireMembership } from "../../organizations/membership.ts";

export const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** How many actors a chain may name (the exchanging client included). */
export const MAX_ACTORS = 5;

const invalidParams = (field: string, issue: string) =>
  new AppError("invalid_params", { details: [{ field, issue }] });
const badSubject = (description: string) => new AppError("invalid_subject_token", { description });

/** The actors of an `act` claim, the outermost (the latest) first. */
export function actorsOf(act: Actor | undefined): string[] {
  const out: string[] = [];
  for (let a = act; a; a = a.act) out.push(a.sub);
  return out;
}

/** `act` for a new actor in front of an existing chain (RFC 8693 §4.1). */
export function actOf(actors: string[]): Actor {
  const [first, ...rest] = actors;
  return rest.length === 0 ? { sub: first } : { sub: first, act: actOf(rest) };
}

/** The token types of the form: only access tokens are taken and issued. */
function checkTypes(ctx: GrantContext): void {
  const f = ctx.form;
  if (f.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw invalidParams("subject_token_type", `only ${ACCESS_TOKEN_TYPE} is supported`);
  }
  if (f.requested_token_type !== undefined && f.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw invalidParams("requested_token_type", `only ${ACCESS_TOKEN_TYPE} is issued`);
  }
  if (f.actor_token !== undefined && f.actor_token_type !== ACCESS_TOKEN_TYPE) {
    throw invalidParams("actor_token_type", `required with actor_token: ${ACCESS_TOKEN_TYPE}`);
  }
  if (f.actor_token === undefined && f.actor_token_type !== undefined) {
    throw invalidParams("actor_token", "required with actor_token_type");
  }
}

/** The subject token, verified and live, of the client's project; with its row when it was itself exchanged. */
async function subjectOf(
  ctx: GrantContext,
  projectId: string,
): Promise<{ claims: VerifiedClaims; row: DelegatedToken | undefined; resourceId: string | null }> {
  const claims = await ctx.tokens.verifyAccessToken(ctx.form.subject_token!);
  if (!claims) throw badSubject("the subject token is malformed, expired or not this service's");
  let resourceId: string | null = null;
  if (claims.aud !== projectId) {
    // A token for one of the project's APIs (RFC 8707): the exchange stays within that API.
    const api = await retryRead(() => findIndicatorTarget(ctx.sql, claims.aud, holderOf(claims)));
    if (api?.project_id !== projectId) throw badSubject("the subject token is of another project");
    resourceId = api.resource_id;
  }
  const live = await liveToken(ctx.sql, { ...claims, aud: projectId }, {
    pathProjectId: null,
    permission: null,
  });
  if (!live) {
    throw badSubject("the subject token is no longer valid: revoked, or its session or subject ended");
  }
  const row = claims.act ? await retryRead(() => findDelegatedToken(ctx.sql, claims.jti)) : undefined;
  if (claims.act && !row) throw badSubject("the subject token is no longer valid");
  return { claims, row, resourceId };
}

/** `actor_token`, when sent: a live client-credentials token of the exchanging client itself. */
async function checkActorToken(ctx: GrantContext, projectId: string, clientId: string): Promise<void> {
  if (ctx.form.actor_token === undefined) return;
  const claims = await ctx.tokens.verifyAccessToken(ctx.form.actor_token);
  const own = claims !== null && claims.aud === projectId && claims.sub === clientId &&
    claims.client_id === clientId && !claims.sid && !claims.act;
  if (!own || !(await liveToken(ctx.sql, claims!, { pathProjectId: null, permission: null }))) {
    throw invalidParams("actor_token", "must be a live client-credentials token of the authenticated client");
  }
}

/**
 * What the new token holds: the requested `resource:permission` codes (or, for one API, its permission codes),
 * each within the intersection, else `invalid_scope`; all the intersection when none is asked (then decided
 * live: `null`). Nothing in common is `invalid_scope` too.
 */
function granted(
  scope: string | undefined,
  possible: ExchangeablePermission[],
  forApi: boolean,
): { ids: string[] | null; codes: string[] } {
  const asked = [...new Set((scope ?? "").split(" ").filter((s) => s !== ""))];
  const match = (p: ExchangeablePermission, s: string) => s === p.code || (forApi && s === p.permission);
  if (asked.length === 0) {
    if (possible.length === 0) {
      throw new AppError("invalid_scope", {
        description: "the subject holds nothing that this client's delegation allows",
      });
    }
    return { ids: null, codes: possible.map((p) => forApi ? p.permission : p.code) };
  }
  const beyond = asked.filter((s) => !possible.some((p) => match(p, s)));
  if (beyond.length > 0) {
    throw new AppError("invalid_scope", {
      description: `beyond what the subject holds and this client may carry: ${
        beyond.join(" ").slice(0, 300)
      }`,
    });
  }
  const chosen = possible.filter((p) => asked.some((s) => match(p, s)));
  return { ids: chosen.map((p) => p.id), codes: chosen.map((p) => forApi ? p.permission : p.code) };
}

/**
 * The organization of the new token: the subject token's (a chain keeps its own), or another the user belongs to
 * (`organization`, for a user's token that is not itself exchanged; `access_denied` for one the user is not a
 * member of, or that requires a second factor the login did not give). Staying in the subject token's
 * organization needs the membership it was issued in.
 */
async function organizationOf(
  ctx: GrantContext,
  projectId: string,
  s: VerifiedClaims,
  chain: DelegatedToken | undefined,
): Promise<string | null> {
  const asked = ctx.form.organization;
  const current = chain ? chain.organization_id : (s.org_id ?? null);
  if (asked === undefined || asked === current) {
    if (current !== null && s.sid) {
      await requireMembership(
        ctx.sql,
        projectId,
        current,
        s.sub,
        issuedAt(s),
      );
    }
    return current;
  }
  if (!s.sid) throw invalidParams("organization", "only a user's token is of an organization");
  if (chain) throw invalidParams("organization", "a chain of exchanges stays in its organization");
  await requireMembership(ctx.sql, projectId, asked, s.sub);
  await requireSecondFactorIn(ctx.sql, projectId, s.sid, asked);
  return asked;
}

export async function tokenExchange(ctx: GrantContext): Promise<TokenResponse> {
  const { sql, form } = ctx;
  required(ctx, "token-exchange", ["subject_token", "subject_token_type"]);
  checkTypes(ctx);
  const asked = formIndicator(form.resource);
  const audience = form.audience === undefined ? undefined : formIndicator(form.audience);
  if (asked !== undefined && audience !== undefined && asked !== audience) {
    throw invalidParams("audience", "differs from resource");
  }
  if (!ctx.client.basic) {
    // Acting for others needs the client's own credentials: a public client's id alone proves nothing.
    throw new AppError("invalid_params", {
      details: [{ field: "Authorization", issue: `required for grant_type=${TOKEN_EXCHANGE}` }],
      oauth: "invalid_client",
    });
  }
  const client = await authenticateClient(sql, ctx.client, "token");
  if (!client.delegation) {
    throw new AppError("unauthorized_client", {
      description: "this client acts for nobody: its delegation is off",
    });
  }
  await checkActorToken(ctx, client.project_id, client.id);
  const subject = await subjectOf(ctx, client.project_id);
  const s = subject.claims;
  const actors = [client.id, ...actorsOf(s.act)];
  if (actors.length > MAX_ACTORS) {
    throw invalidParams("subject_token", `a chain of actors is at most ${MAX_ACTORS} deep`);
  }
  const row: DelegatedRow = subject.row
    ? { ...subject.row, actors, ancestors: [s.jti, ...subject.row.ancestors] }
    : {
      subject_type: s.sid ? "user" : "client",
      subject_id: s.sub,
      subject_client_id: s.client_id,
      session_id: s.sid ?? null,
      subject_issued_at: issuedAt(s),
      actors,
      ancestors: [s.jti],
      organization_id: null,
    };
  row.organization_id = await organizationOf(ctx, client.project_id, s, subject.row);
  const block = await retryRead(() =>
    exchangeBlock(sql, {
      projectId: client.project_id,
      userId: row.subject_type === "user" ? row.subject_id : null,
      subjectClientId: row.subject_client_id,
      actors,
      subjectIssuedAt: row.subject_issued_at,
    })
  );
  // RFC 8693 §4.4: a subject token naming who may act for it (or whose client names one now) goes to that one.
  const mayAct = s.may_act?.sub ?? block.may_act;
  if ((s.may_act && s.may_act.sub !== client.id) || (block.may_act && block.may_act !== client.id)) {
    throw new AppError("unauthorized_client", {
      description: "the subject token's may_act names another client",
    });
  }
  if (block.stopped !== null) {
    throw new AppError("unauthorized_client", {
      description: "the user stopped this agent from acting for them",
    });
  }
  const indicator = asked ?? audience;
  let resourceId = subject.resourceId;
  let aud = client.project_id;
  const who = holderOf(s);
  if (indicator !== undefined) {
    const api = await retryRead(() => findIndicatorTarget(sql, indicator, who));
    if (!api || api.project_id !== client.project_id) {
      throw new AppError("invalid_target", {
        description: "no API of this project has this resource indicator",
      });
    }
    if (resourceId !== null && api.resource_id !== resourceId) {
      throw new AppError("invalid_target", { description: "the subject token is for another API" });
    }
    resourceId = api.resource_id;
    aud = indicator;
  } else if (resourceId !== null) {
    aud = s.aud; // a token for an API exchanges for a token for the same API
  }
  let possible = await retryRead(() =>
    exchangeablePermissions(sql, client.project_id, who, actors, resourceId, row.organization_id)
  );
  // A subject token for an API carries what its scope says (what the user consented to): never more.
  if (subject.resourceId !== null) {
    const scoped = new Set((s.scope ?? "").split(" "));
    possible = possible.filter((p) => scoped.has(p.permission));
  }
  // A subject token that was itself exchanged holds what it asked for: the new one never more.
  const narrowed = subject.row?.permission_ids;
  if (narrowed) possible = possible.filter((p) => narrowed.includes(p.id));
  const grant = granted(form.scope, possible, resourceId !== null);
  // In a chain, what was granted is kept as it is: a later exchange in it can only narrow.
  const permissionIds = grant.ids ?? (subject.row ? possible.map((p) => p.id) : null);
  const scope = grant.codes.join(" ");
  return await transaction(sql, async (tx) => {
    const { token, claims } = await ctx.tokens.issueAccessToken({
      projectId: client.project_id,
      subject: s.sub,
      clientId: client.id,
      sessionId: s.sid,
      issuedAt: client.now,
      kid: client.current_kid,
      ...(aud !== client.project_id ? { target: { indicator: aud, scope } } : {}),
      exchange: { act: actOf(actors), scope, notAfter: s.exp },
      mayAct,
      organizationId: row.organization_id,
    });
    await insertDelegatedToken(tx, {
      ...row,
      project_id: client.project_id,
      jti: claims.jti,
      permission_ids: permissionIds,
      resource_id: resourceId,
      expires_at: claims.exp,
    });
    await record(tx, {
      projectId: client.project_id,
      type: "token.exchanged",
      source: clientSource(client.id, ctx.client.request),
      target: { type: row.subject_type, id: row.subject_id },
      details: {
        subject: { type: row.subject_type, id: row.subject_id },
        actor: client.id,
        actors,
        permissions: grant.codes,
        ...(aud !== client.project_id ? { resource: aud } : {}),
        ...(row.organization_id ? { organization_id: row.organization_id } : {}),
        jti: claims.jti,
      },
    });
    return {
      access_token: token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: "Bearer" as const,
      expires_in: claims.exp - claims.iat,
      scope,
    };
  });
}

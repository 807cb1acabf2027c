/**
 * Upstream OpenID Connect identity providers of a project: their settings, their discovery document (fetched
 * and validated when saved, refreshed when a day old at sign-in), and their client secret, sealed with
 * KEY_ENCRYPTION_KEY when the service has one and never returned. A provider decides who can sign in as which
 * user (it creates users, and may link to existing ones by email), so creating or changing one is reserved to a
 * caller that covers every permission of the project.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  deleteProviderRow,
  findProvider,
  insertProvider,
  listProviderRows,
  type ProviderFields,
  type ProviderRow,
  updateProviderMetadata,
  updateProviderRow,
} from "../../db/federation/identity_providers.ts";
import type { PageOf } from "../../openapi/fields.ts";
import {
  type CreateIdentityProviderRequest,
  type IdentityProvider,
  type IdentityProviderListQuery,
  PRESETS,
  type UpdateIdentityProviderRequest,
} from "../../openapi/identity_providers.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { requireCovered, requireCoversAll } from "../authz/coverage.ts";
import { requireProjectRole } from "../authz/roles.ts";
import { isOrganizationOf } from "../organizations/membership.ts";
import { AppError } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { OutboundError, outboundJson } from "../outbound/outbound.ts";
import type { Principal } from "../shared/principal.ts";
import { targetIssue } from "../outbound/webhook_targets.ts";

export type ProviderSettings = {
  vault: KeyVault | null;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: loopback and private addresses may be reached (tests, closed networks). */
  allowPrivate: boolean;
  publicUrl: string;
};

/** A discovery document older than this is fetched again at the next sign-in. */
const METADATA_MAX_AGE_MS = 24 * 3600 * 1000;
const DEFAULT_SCOPES = ["openid", "email", "profile"];

/** The redirect URI to register at the provider: the service's callback for this provider. */
export const redirectUriOf = (publicUrl: string, providerId: string) =>
  `${publicUrl}/authorize/idp/${encodeURIComponent(providerId)}/callback`;

export function toApi(row: ProviderRow, publicUrl: string): IdentityProvider {
  return {
    id: row.id,
    project_id: row.project_id,
    kind: row.kind,
    preset: row.preset,
    display_name: row.display_name,
    issuer: row.issuer,
    client_id: row.client_id,
    has_client_secret: row.client_secret !== null || row.client_secret_sealed !== null,
    scopes: row.scopes,
    claims: { email: row.claim_email, name: row.claim_name, picture: row.claim_picture },
    jit_provisioning: row.jit_provisioning,
    default_role_id: row.default_role_id,
    link_by_verified_email: row.link_by_verified_email,
    is_active: row.is_active,
    organization_id: row.organization_id,
    redirect_uri: redirectUriOf(publicUrl, row.id),
    metadata_fetched_at: row.metadata_fetched_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** What the service keeps of a discovery document. */
export type Metadata = {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  token_endpoint_auth_methods_supported?: string[];
  id_token_signing_alg_values_supported?: string[];
  end_session_endpoint?: string;
  /** RFC 9207: the provider sends `iss` in its authorization responses. */
  authorization_response_iss_parameter_supported?: boolean;
};

const invalidIssuer = (issue: string) =>
  new AppError("invalid_params", {
    description: "the identity provider's discovery failed",
    details: [{ field: "issuer", issue }],
  });

/**
 * Fetches `{issuer}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4) through the address
 * guard, and checks it: its `issuer` equal to ours byte for byte (§4.3), the endpoints the code flow needs, each
 * a URL the guard allows, `code` among the response types and S256 among the PKCE methods when it lists them.
 * Throws `invalid_params` on `issuer` saying what was wrong.
 */
export async function discover(issuer: string, allowPrivate: boolean): Promise<Metadata> {
  const issue = targetIssue(new URL(issuer), allowPrivate);
  if (issue) throw invalidIssuer(issue);
  const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let doc: Record<string, unknown>;
  try {
    const answer = await outboundJson(url, { allowPrivate });
    if (answer.status !== 200) throw new OutboundError(`${url} answered ${answer.status}`);
    doc = answer.json;
  } catch (err) {
    if (err instanceof OutboundError) throw invalidIssuer(`discovery failed: ${err.message}`);
    throw err;
  }
  if (doc.issuer !== issuer) {
    throw invalidIssuer(
      `the discovery document names the issuer ${JSON.stringify(String(doc.issuer ?? "")).slice(0, 300)}, ` +
        "which must equal this issuer exactly",
    );
  }
  const endpoint = (name: string): string => {
    const value = doc[name];
    if (typeof value !== "string") throw invalidIssuer(`the discovery document has no ${name}`);
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw invalidIssuer(`the discovery document's ${name} is not a URL`);
    }
    const why = targetIssue(parsed, allowPrivate);
    if (why) throw invalidIssuer(`the discovery document's ${name} ${why}`);
    return value;
  };
  const list = (name: string): string[] | undefined => {
    const value = doc[name];
    return Array.isArray(value) && value.every((v) => typeof v === "string") ? value as string[] : undefined;
  };
  const responseTypes = list("response_types_supported");
  if (responseTypes && !responseTypes.some((t) => t.split(" ").length === 1 && t === "code")) {
    throw invalidIssuer("the provider does not support response_type=code");
  }
  const pkce = list("code_challenge_methods_supported");
  if (pkce && !pkce.includes("S256")) throw invalidIssuer("the provider does not support PKCE with S256");
  const metadata: Metadata = {
    issuer,
    authorization_endpoint: endpoint("authorization_endpoint"),
    token_endpoint: endpoint("token_endpoint"),
    jwks_uri: endpoint("jwks_uri"),
  };
  if (doc.userinfo_endpoint !== undefined) metadata.userinfo_endpoint = endpoint("userinfo_endpoint");
  const authMethods = list("token_endpoint_auth_methods_supported");
  if (authMethods) metadata.token_endpoint_auth_methods_supported = authMethods;
  const algs = list("id_token_signing_alg_values_supported");
  if (algs) metadata.id_token_signing_alg_values_supported = algs;
  if (typeof doc.end_session_endpoint === "string") metadata.end_session_endpoint = doc.end_session_endpoint;
  if (doc.authorization_response_iss_parameter_supported === true) {
    metadata.authorization_response_iss_parameter_supported = true;
  }
  return metadata;
}

/** The issuer and display name a create request names, directly or through its preset. */
function issuerOf(input: CreateIdentityProviderRequest): { issuer: string; display_name: string } {
  const preset = input.preset ? PRESETS[input.preset] : null;
  let issuer = input.issuer;
  if (!issuer && input.preset === "microsoft_entra_id") {
    if (!input.tenant_id) {
      throw new AppError("invalid_params", {
        details: [{ field: "tenant_id", issue: "is required with the microsoft_entra_id preset" }],
      });
    }
    issuer = PRESETS.microsoft_entra_id.issuer.replace("{tenant_id}", input.tenant_id);
  } else if (!issuer && preset) issuer = preset.issuer;
  if (!issuer) {
    throw new AppError("invalid_params", {
      details: [{ field: "issuer", issue: "is required without a preset" }],
    });
  }
  const displayName = input.display_name ?? preset?.display_name;
  if (!displayName) {
    throw new AppError("invalid_params", {
      details: [{ field: "display_name", issue: "is required without a preset" }],
    });
  }
  return { issuer, display_name: displayName };
}

function sealSecret(s: ProviderSettings, id: string, secret: string | null) {
  if (secret === null) return { client_secret: null, client_secret_sealed: null };
  return s.vault
    ? { client_secret: null, client_secret_sealed: s.vault.sealText(`idp:${id}`, secret) }
    : { client_secret: secret, client_secret_sealed: null };
}

/** The client secret a provider authenticates with at its token endpoint, or null for a public client. */
export function secretOf(s: { vault: KeyVault | null }, row: ProviderRow): string | null {
  if (row.client_secret_sealed) {
    if (!s.vault) throw new Error("the client secret is sealed: KEY_ENCRYPTION_KEY is needed to open it");
    return s.vault.openText(`idp:${row.id}`, row.client_secret_sealed);
  }
  return row.client_secret;
}

/** The default role must be the project's (400 `invalid_params`), and the caller must hold what it gives. */
async function checkRole(
  tx: Sql,
  caller: Principal,
  projectId: string,
  roleId: string | null,
): Promise<void> {
  if (roleId === null) return;
  await requireProjectRole(tx, projectId, roleId, "default_role_id");
  await requireCovered(tx, caller, projectId, { roleId }, "default_role_id", "giving this role at sign-in");
}

/** The organization must be the project's (400 `invalid_params` naming `organization_id`). */
async function checkOrganization(tx: Sql, projectId: string, organizationId: string | null): Promise<void> {
  if (organizationId === null) return;
  if (!(await isOrganizationOf(tx, projectId, organizationId))) {
    throw new AppError("invalid_params", {
      details: [{ field: "organization_id", issue: "is not an organization of this project" }],
    });
  }
}

const guard = (tx: Sql, caller: Principal, projectId: string, field: string) =>
  requireCoversAll(tx, caller, projectId, field, "managing identity providers");

/** The audit trail's view of a provider: its API shape without what changes on every save. */
const trailOf = (row: ProviderRow, publicUrl: string) => {
  const { metadata_fetched_at: _, has_client_secret: __, ...rest } = toApi(row, publicUrl);
  return rest;
};

export async function createProvider(
  sql: Sql,
  s: ProviderSettings,
  caller: Principal,
  projectId: string,
  input: CreateIdentityProviderRequest,
): Promise<IdentityProvider> {
  const { issuer, display_name } = issuerOf(input);
  const roleId = input.default_role_id || null;
  const organizationId = input.organization_id || null;
  // The caller's standing and the role first: no request leaves the service on behalf of a caller it refuses.
  await transaction(sql, async (tx) => {
    await guard(tx, caller, projectId, "issuer");
    await checkRole(tx, caller, projectId, roleId);
    await checkOrganization(tx, projectId, organizationId);
  });
  const metadata = await discover(issuer, s.allowPrivate);
  const id = newId();
  return await transaction(sql, async (tx) => {
    await guard(tx, caller, projectId, "issuer");
    await checkRole(tx, caller, projectId, roleId);
    await insertProvider(tx, {
      project_id: projectId,
      id,
      kind: "oidc",
      preset: input.preset ?? null,
      display_name,
      issuer,
      client_id: input.client_id,
      ...sealSecret(s, id, input.client_secret ?? null),
      scopes: [...new Set(input.scopes ?? DEFAULT_SCOPES)],
      claim_email: input.claims?.email ?? "email",
      claim_name: input.claims?.name ?? "name",
      claim_picture: input.claims?.picture ?? "picture",
      jit_provisioning: input.jit_provisioning ?? false,
      default_role_id: roleId,
      link_by_verified_email: input.link_by_verified_email ?? false,
      is_active: input.is_active ?? true,
      organization_id: organizationId,
      metadata,
    });
    await record(tx, {
      projectId,
      type: "identity_provider.created",
      source: sourceOf(caller),
      target: { type: "identity_provider", id },
      details: { issuer, client_id: input.client_id },
    });
    return toApi((await findProvider(tx, projectId, id))!, s.publicUrl);
  });
}

export async function getProvider(
  sql: Sql,
  s: ProviderSettings,
  projectId: string,
  id: string,
): Promise<IdentityProvider> {
  const row = await retryRead(() => findProvider(sql, projectId, id));
  if (!row) throw new AppError("identity_provider_not_found");
  return toApi(row, s.publicUrl);
}

export async function listProviders(
  sql: Sql,
  s: ProviderSettings,
  projectId: string,
  q: IdentityProviderListQuery,
): Promise<PageOf<IdentityProvider>> {
  const page = await retryRead(() => listProviderRows(sql, projectId, q));
  return { data: page.data.map((r) => toApi(r, s.publicUrl)), pagination: page.pagination };
}

export async function updateProvider(
  sql: Sql,
  s: ProviderSettings,
  caller: Principal,
  projectId: string,
  id: string,
  input: UpdateIdentityProviderRequest,
): Promise<IdentityProvider> {
  const current = await findProvider(sql, projectId, id);
  if (!current) throw new AppError("identity_provider_not_found");
  const roleId = input.default_role_id === undefined
    ? current.default_role_id
    : input.default_role_id || null;
  const organizationId = input.organization_id === undefined
    ? current.organization_id
    : input.organization_id || null;
  await transaction(sql, async (tx) => {
    await guard(tx, caller, projectId, "provider_id");
    await checkRole(tx, caller, projectId, roleId);
    await checkOrganization(tx, projectId, organizationId);
  });
  const metadata = await discover(input.issuer, s.allowPrivate);
  return await transaction(sql, async (tx) => {
    const before = await findProvider(tx, projectId, id, { lock: true });
    if (!before) throw new AppError("identity_provider_not_found");
    await guard(tx, caller, projectId, "provider_id");
    await checkRole(tx, caller, projectId, roleId);
    const secret = input.client_secret === undefined
      ? { client_secret: before.client_secret, client_secret_sealed: before.client_secret_sealed }
      : sealSecret(s, id, input.client_secret);
    const fields: ProviderFields = {
      kind: "oidc",
      preset: before.preset,
      display_name: input.display_name,
      issuer: input.issuer,
      client_id: input.client_id,
      ...secret,
      scopes: input.scopes ? [...new Set(input.scopes)] : before.scopes,
      claim_email: input.claims?.email ?? before.claim_email,
      claim_name: input.claims?.name ?? before.claim_name,
      claim_picture: input.claims?.picture ?? before.claim_picture,
      jit_provisioning: input.jit_provisioning ?? before.jit_provisioning,
      default_role_id: roleId,
      link_by_verified_email: input.link_by_verified_email ?? before.link_by_verified_email,
      is_active: input.is_active ?? before.is_active,
      organization_id: organizationId,
      metadata,
    };
    await updateProviderRow(tx, projectId, id, fields);
    const after = (await findProvider(tx, projectId, id))!;
    await record(tx, {
      projectId,
      type: before.is_active === after.is_active
        ? "identity_provider.updated"
        : after.is_active
        ? "identity_provider.activated"
        : "identity_provider.deactivated",
      source: sourceOf(caller),
      target: { type: "identity_provider", id },
      changes: diff(
        trailOf(before, s.publicUrl),
        trailOf(after, s.publicUrl),
        input.client_secret === undefined ? [] : ["client_secret"],
      ),
    });
    return toApi(after, s.publicUrl);
  });
}

export async function deleteProvider(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findProvider(tx, projectId, id, { lock: true });
    if (!current) throw new AppError("identity_provider_not_found");
    await deleteProviderRow(tx, projectId, id);
    await record(tx, {
      projectId,
      type: "identity_provider.deleted",
      source: sourceOf(caller),
      target: { type: "identity_provider", id },
      details: { issuer: current.issuer, display_name: current.display_name },
    });
  });
}

/**
 * The provider's discovery document for a sign-in: the stored one, or a fresh one when it is a day old (a
 * failed refresh keeps the stored one, which was valid, and is retried at the next sign-in).
 */
export async function metadataFor(sql: Sql, allowPrivate: boolean, row: ProviderRow): Promise<Metadata> {
  const stored = row.metadata as Metadata;
  if (Date.now() - Date.parse(row.metadata_fetched_at) < METADATA_MAX_AGE_MS) return stored;
  try {
    const fresh = await discover(row.issuer, allowPrivate);
    await updateProviderMetadata(sql, row.project_id, row.id, fresh);
    return fresh;
  } catch (err) {
    if (err instanceof AppError) return stored;
    throw err;
  }
}

/**
 * The provider's side of an upstream sign-in: the code traded at the token endpoint (client authentication by
 * Basic or in the form, as the provider supports, and the PKCE verifier), the ID token validated with jose
 * (OpenID Connect Core §3.1.3.7: signature by the provider's JWKS, `iss`, `aud`, `exp`, `nonce`, `azp`), and the
 * claims the service reads, from the ID token or else from userinfo. Every request goes through the address
 * guard (domain/outbound/outbound.ts).
 */
import { createLocalJWKSet, errors as joseErrors, type JWTPayload, jwtVerify } from "jose";
import type { Sql } from "../../db/connection.ts";
import type { ProviderRow } from "../../db/federation/identity_providers.ts";
import { metadataFor, type ProviderSettings, redirectUriOf, secretOf } from "./identity_providers.ts";
import { OutboundError, outboundJson } from "../outbound/outbound.ts";
import { normalizeEmail } from "../accounts/emails.ts";

/** Signature algorithms an upstream ID token may use: asymmetric only (never `none`, never a shared secret). */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

/** The provider's claims the service reads. */
export type Upstream = {
  sub: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  picture: string | null;
  /** When the provider last authenticated the user (`auth_time`, seconds), when it says. */
  authTime: number | null;
};

/** A refusal of the provider's answer, with the reason the audit trail records. */
export class Refused extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** Trades the code for tokens and validates the ID token; the claims the service reads. */
export async function redeem(
  sql: Sql,
  s: ProviderSettings,
  provider: ProviderRow,
  code: string,
  state: { nonce: string; code_verifier: string },
): Promise<Upstream> {
  const metadata = await metadataFor(sql, s.allowPrivate, provider);
  const secret = secretOf(s, provider);
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUriOf(s.publicUrl, provider.id),
    code_verifier: state.code_verifier,
  });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  const methods = metadata.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
  if (secret !== null && methods.includes("client_secret_basic")) {
    const enc = (v: string) => encodeURIComponent(v).replace(/%20/g, "+");
    headers.authorization = `Basic ${btoa(`${enc(provider.client_id)}:${enc(secret)}`)}`;
  } else {
    form.set("client_id", provider.client_id);
    if (secret !== null) form.set("client_secret", secret);
  }
  const answer = await outboundJson(metadata.token_endpoint, {
    allowPrivate: s.allowPrivate,
    method: "POST",
    headers,
    body: form.toString(),
  });
  if (answer.status !== 200) {
    const error = typeof answer.json.error === "string" ? answer.json.error.slice(0, 100) : "no error code";
    throw new Refused("token_error", `the token endpoint answered ${answer.status} ${error}`);
  }
  const idToken = answer.json.id_token;
  if (typeof idToken !== "string") throw new Refused("invalid_id_token", "the token answer has no id_token");
  const jwks = await outboundJson(metadata.jwks_uri, { allowPrivate: s.allowPrivate });
  if (jwks.status !== 200 || !Array.isArray(jwks.json.keys)) {
    throw new OutboundError(`the JWKS answered ${jwks.status} without keys`);
  }
  let claims: JWTPayload;
  try {
    const allowed = metadata.id_token_signing_alg_values_supported?.filter((a) => ALGORITHMS.includes(a));
    ({ payload: claims } = await jwtVerify(idToken, createLocalJWKSet(jwks.json as never), {
      issuer: provider.issuer,
      audience: provider.client_id,
      algorithms: allowed && allowed.length > 0 ? allowed : ALGORITHMS,
      requiredClaims: ["sub", "exp", "iat"],
      clockTolerance: 30,
    }));
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) {
      throw new Refused("invalid_id_token", `the ID token was refused: ${err.code} ${err.message}`);
    }
    throw err;
  }
  if (claims.nonce !== state.nonce) throw new Refused("nonce_mismatch", "the ID token's nonce is not ours");
  // §3.1.3.7: with several audiences `azp` must be present, and when present it must be our client id.
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if ((audiences.length > 1 || claims.azp !== undefined) && claims.azp !== provider.client_id) {
    throw new Refused("invalid_id_token", "the ID token's azp is not our client id");
  }
  const sub = claims.sub!;
  if (sub.length === 0 || sub.length > 255) {
    throw new Refused("invalid_id_token", "the ID token's sub is unusable");
  }
  // Many providers put the profile and email claims in userinfo only (OpenID Connect Core §5.4): ask it for what
  // the ID token lacks; its `sub` must be the ID token's (§5.3.2), and the ID token's own claims win.
  const accessToken = answer.json.access_token;
  const wanted = [provider.claim_email, provider.claim_name, provider.claim_picture, "email_verified"];
  if (
    metadata.userinfo_endpoint && typeof accessToken === "string" &&
    wanted.some((c) => claims[c] === undefined)
  ) {
    const info = await outboundJson(metadata.userinfo_endpoint, {
      allowPrivate: s.allowPrivate,
      headers: { authorization: `Bearer ${accessToken}` },
    });
    if (info.status === 200) {
      if (info.json.sub !== sub) throw new Refused("invalid_id_token", "userinfo names another sub");
      for (const c of wanted) {
        if (claims[c] === undefined && info.json[c] !== undefined) claims[c] = info.json[c];
      }
    }
  }
  const text = (name: string, max: number) => {
    const v = claims[name];
    return typeof v === "string" && v.length > 0 && v.length <= max ? v : null;
  };
  const email = text(provider.claim_email, 100);
  const picture = text(provider.claim_picture, 2000);
  return {
    sub,
    email: email && /^[^\s@]+@[^\s@]+$/.test(email) ? normalizeEmail(email) ?? null : null,
    emailVerified: claims.email_verified === true || claims.email_verified === "true",
    name: text(provider.claim_name, 100),
    picture: picture && /^https:\/\//.test(picture) ? picture : null,
    authTime: typeof claims.auth_time === "number" && Number.isFinite(claims.auth_time)
      ? claims.auth_time
      : null,
  };
}

/** The domain's settings of a request, read from the configuration and the keys: one place for every page and operation. */
import type { InvitationSettings } from "../domain/organizations/invitations.ts";
import type { Context } from "hono";
import type { LinkSettings } from "../domain/accounts/account_links.ts";
import type { MfaSettings } from "../domain/factors/proof.ts";
import type { ProviderSettings } from "../domain/federation/identity_providers.ts";
import type { SsoSettings } from "../domain/signin/sso.ts";
import type { AppEnv, Deps } from "./env.ts";

/** Single sign-on's settings, from the configuration. */
export function ssoSettings(c: Context<AppEnv>): SsoSettings {
  const { config } = c.get("deps");
  return {
    idleTtl: config.ssoIdleTtl,
    ttl: config.ssoTtl,
    issuer: config.publicUrl,
    codeTtl: config.authCodeTtl,
  };
}

/** The second factors' settings: the key vault, and the issuer name authenticator apps show. */
export function mfaSettings(c: Context<AppEnv>): MfaSettings {
  const deps = c.get("deps");
  return {
    vault: deps.keys.vault,
    issuer: new URL(deps.config.publicUrl).host,
    publicUrl: deps.config.publicUrl,
  };
}

/** Where invitation links point and how their mails' links are sealed. */
export function invitationSettings(c: Context<AppEnv>): InvitationSettings {
  const { config, keys } = c.get("deps");
  return { publicUrl: config.publicUrl, vault: keys.vault };
}

/** The links' settings, from the configuration. */
export function linkSettings(c: Context<AppEnv>): LinkSettings {
  const { config, keys } = c.get("deps");
  return {
    publicUrl: config.publicUrl,
    vault: keys.vault,
    passwordResetTtl: config.passwordResetTtl,
    invitationTtl: config.invitationTtl,
    emailVerificationTtl: config.emailVerificationTtl,
  };
}

export const providerSettings = (deps: Deps): ProviderSettings => ({
  vault: deps.keys.vault,
  allowPrivate: deps.config.webhookAllowPrivateTargets,
  publicUrl: deps.config.publicUrl,
});

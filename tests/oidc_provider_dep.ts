/**
 * panva's OpenID Provider, a real upstream for tests/federation_oidc_provider_test.ts. A module of its own rather
 * than a line of deps.ts: it warns about the runtime when loaded, and every test file that imports deps.ts would
 * load it for nothing.
 */
export { default as OidcProvider } from "npm:oidc-provider@9.13.3";

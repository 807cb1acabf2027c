/**
 * Packages only the tests use, pinned here rather than in deno.json's import map, so that `deno task start`
 * on a fresh clone never downloads them: Deno installs every package of the import map and of deno.lock, and
 * the tests have a lockfile of their own (tests/deno.lock).
 */
export { type Browser, chromium, type Page } from "npm:playwright-core@1.65.1";
export * as oauth from "npm:oauth4webapi@3.8.8";
export { Webhook } from "npm:standardwebhooks@1.1.1";
export * as oidc from "npm:openid-client@6.9.0";

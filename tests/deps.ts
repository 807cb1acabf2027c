/**
 * Packages only the tests use, pinned here rather than in deno.json's import map, so that `deno task start`
 * on a fresh clone never downloads them: Deno installs every package of the import map and of deno.lock, and
 * the tests have a lockfile of their own (tests/deno.lock).
 */
export * as oauth from "npm:oauth4webapi@3.8.8";
export { Webhook } from "npm:standardwebhooks@1.1.1";
export * as oidc from "npm:openid-client@6.9.0";
export { Ajv2020, type ErrorObject, type ValidateFunction } from "npm:ajv@8.20.0/dist/2020.js";
/** ajv-formats, a CommonJS module: its types name the plugin `default`, its runtime has it both ways. */
export { default as ajvFormats } from "npm:ajv-formats@3.0.1";
/** A QR decoder: the account page's QR code, read back from its pixels, must carry the key shown beside it. */
export { default as decodeQR } from "npm:@paulmillr/qr@0.3.0/decode.js";

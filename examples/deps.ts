/**
 * The npm packages the examples use, pinned here and locked in examples/deno.lock (run them with
 * `--lock=examples/deno.lock`), so that `deno task start` on a fresh clone never downloads them.
 */
export * as oidc from "npm:openid-client@6.9.0";

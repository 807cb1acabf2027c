/**
 * The HTTP side of client authentication (RFC 6749 §2.3.1): HTTP Basic decoding, the form's `client_id`, and
 * the refusal of secrets in the body. The domain (`domain/oauth/client_auth.ts`) decides what they authenticate;
 * the `WWW-Authenticate: Basic` challenge is added to every 401 answer (routes/errors.ts).
 */
import type { Context } from "hono";
import { decodeBase64Strict } from "../../../domain/shared/base64.ts";
import { badCredentials, type PresentedClient } from "../../../domain/oauth/client_auth.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import type { AppEnv } from "../../env.ts";
import { requestInfo } from "../../request_info.ts";

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded, then joined by a colon and base64-encoded. */
export function parseBasicCredentials(header: string): { clientId: string; secret: string } {
  const m = /^Basic +(\S+) *$/i.exec(header);
  if (!m) throw badCredentials("the Authorization header is not HTTP Basic");
  const bytes = decodeBase64Strict(m[1]);
  if (!bytes) throw badCredentials("the Basic credentials are not valid base64");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badCredentials("the Basic credentials are not valid UTF-8");
  }
  const colon = text.indexOf(":");
  if (colon < 0) throw badCredentials("the Basic credentials have no colon between client id and secret");
  const malformed = "the Basic credentials are not form-urlencoded client id and secret";
  const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
  let clientId: string, secret: string;
  try {
    clientId = formDecode(text.slice(0, colon));
    secret = formDecode(text.slice(colon + 1));
  } catch {
    throw badCredentials(malformed); // a URIError: a malformed percent-escape
  }
  if (!clientId || !secret) throw badCredentials(malformed);
  // Control characters are in no client id or secret; a NUL byte could not even be looked up.
  // deno-lint-ignore no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(clientId + secret)) throw badCredentials(malformed);
  return { clientId, secret };
}

/**
 * What the request presents to identify its client: HTTP Basic when sent, else the form's `client_id`. A
 * secret in the body (RFC 6749 §2.3.1 allows it, we do not), a malformed header, or a `client_id` that
 * differs from the Basic one is carried as `error`, raised where the client is authenticated.
 */
export function presentedClient(
  c: Context<AppEnv>,
  form: { client_id?: string; client_secret?: string },
): PresentedClient {
  const request = requestInfo(c);
  const authorization = c.req.header("authorization");
  try {
    if (form.client_secret !== undefined) {
      // RFC 6749 §5.2: an unsupported authentication method is `invalid_client`; two at once, `invalid_request`.
      throw new AppError("invalid_params", {
        details: [{ field: "client_secret", issue: "send the secret in HTTP Basic authentication only" }],
        oauth: authorization === undefined ? "invalid_client" : undefined,
      });
    }
    if (!authorization) return { clientId: form.client_id, basic: false, request };
    const basic = parseBasicCredentials(authorization);
    if (form.client_id !== undefined && basic.clientId !== form.client_id) {
      throw new AppError("invalid_params", {
        details: [{ field: "client_id", issue: "differs from the client id of the Basic credentials" }],
      });
    }
    return { clientId: basic.clientId, secret: basic.secret, basic: true, request };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { clientId: form.client_id, basic: authorization !== undefined, error: err, request };
  }
}

/** The client the form presents, kept on the context so that the request log names it once authenticated. */
export function presentedClientOf(c: Context<AppEnv>, form: { client_id?: string; client_secret?: string }) {
  const client = presentedClient(c, form);
  c.set("client", client);
  return client;
}

/**
 * A client's requests to the token endpoints as forms (RFC 6749 §2.3.1): HTTP Basic for a confidential client,
 * `client_id` in the form for a public one. Shared by the device grant and token exchange helpers.
 */

/** Who asks, and where. */
export type TokenClientOptions = {
  /** The service's URL (its `PUBLIC_URL`, the metadata's `issuer`). */
  issuer: string;
  clientId: string;
  /** For a confidential client (`client_secret_basic`): sent with HTTP Basic. */
  clientSecret?: string;
  /** The fetch to send requests with; the platform's by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
};

/** RFC 6749 §2.3.1: the id and secret form-urlencoded, then joined and base64-encoded. */
function basic(clientId: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  const bytes = new TextEncoder().encode(`${enc(clientId)}:${enc(secret)}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

/** POSTs `form` to `path` of the service as the client. */
export async function postTokenForm(
  o: TokenClientOptions,
  path: string,
  form: Record<string, string>,
): Promise<Response> {
  const send = o.fetch ??
    ((url: string, init: RequestInit) => fetch(url, init));
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  const body = new URLSearchParams(form);
  if (o.clientSecret !== undefined) {
    headers.authorization = basic(o.clientId, o.clientSecret);
  } else body.set("client_id", o.clientId);
  return await send(`${o.issuer.replace(/\/+$/, "")}${path}`, {
    method: "POST",
    headers,
    body: body.toString(),
  });
}

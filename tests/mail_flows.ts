/** The code exchange at a service of a test's own. */
import assert from "node:assert/strict";
import { REDIRECT_URI } from "./helpers.ts";

export async function exchangeCodeAt(
  url: string,
  clientId: string,
  code: string,
  verifier: string,
): Promise<{ access_token: string; id_token?: string; refresh_token: string }> {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }).toString(),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

/**
 * A client's SCIM tokens on its console page (docs/provisioning.md § The client and its token): the tokens with
 * when each expires and was last used, a form that makes one (shown once, as a client's secret is), and a
 * button that revokes each. The posts are clients.tsx's.
 */
import type { ScimToken } from "../../openapi/clients.ts";
import type { Once } from "../../domain/console/shown_once.ts";
import { CopyId, Csrf, Field, type Problem, Time } from "./layout.tsx";
import { areaApi } from "./projects.tsx";
import type { Console } from "./session.ts";

/** The client's SCIM tokens, or null where the console's token may not read them. */
export async function scimTokensOf(k: Console, clientId: string): Promise<ScimToken[] | null> {
  const res = await k.api<{ data: ScimToken[] }>(
    "GET",
    `${areaApi(k, "clients")}/${encodeURIComponent(clientId)}/scim-tokens`,
  );
  return res.ok ? res.body.data : null;
}

/** A SCIM token just made: shown now and never again. */
function TokenOnce(p: { once: Once }) {
  if (p.once.state !== "fresh") {
    return (
      <p class="notice" id="scim-token-shown">
        The SCIM token was shown once and is not shown again. If it was not stored, revoke it and make
        another.
      </p>
    );
  }
  return (
    <section aria-labelledby="scim-token-heading" class="notice">
      <h2 id="scim-token-heading">The SCIM token</h2>
      <p>
        Token id: <CopyId id={p.once.credentials.id} label="SCIM token id" />
      </p>
      <p>The token (shown only now; paste it into the directory as its secret token):</p>
      <p class="secret" id="scim-token">{p.once.credentials.secret}</p>
      <button type="button" data-copy="scim-token" hidden>Copy token</button>
    </section>
  );
}

export function ScimTokens(
  p: {
    k: Console;
    action: string;
    tokens: ScimToken[];
    readonly: boolean;
    once?: Once;
    problem: Problem | null;
  },
) {
  return (
    <section aria-labelledby="scim-tokens-heading" id="scim-tokens">
      <h2 id="scim-tokens-heading">SCIM tokens</h2>
      {p.once && <TokenOnce once={p.once} />}
      <p class="hint">
        For a directory (Entra ID, Okta) that sends one fixed token to this project's SCIM endpoints: it acts
        with this client's permissions (give it scim:read and scim:write), until revoked or expired; rotating
        the secret or deactivating the client refuses it.
      </p>
      {p.tokens.length === 0 ? <p>This client has no SCIM token.</p> : (
        <table>
          <caption>SCIM tokens, {p.tokens.length} in all</caption>
          <thead>
            <tr>
              <th scope="col">Description</th>
              <th scope="col">Made</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              {!p.readonly && <th scope="col">Revoke</th>}
            </tr>
          </thead>
          <tbody>
            {p.tokens.map((t) => (
              <tr key={t.id}>
                <td>{t.description ?? t.id}</td>
                <td>
                  <Time at={t.created_at} />
                </td>
                <td>{t.expires_at ? <Time at={t.expires_at} /> : "never"}</td>
                <td>
                  <Time at={t.last_used_at} />
                </td>
                {!p.readonly && (
                  <td>
                    <form method="post" action={`${p.action}/scim-tokens/${encodeURIComponent(t.id)}/revoke`}>
                      <Csrf k={p.k} back={p.action} />
                      <button type="submit" class="danger" aria-label={`Revoke ${t.description ?? t.id}`}>
                        Revoke
                      </button>
                    </form>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {!p.readonly && (
        <form method="post" action={`${p.action}/scim-tokens`}>
          <Csrf k={p.k} back={p.action} />
          <Field
            name="scim_description"
            apiField="description"
            label="Token description"
            problem={p.problem}
            hint='What it is for, e.g. "Entra ID provisioning".'
          />
          <Field
            name="scim_expires_in_days"
            apiField="expires_in_days"
            label="Expires in days"
            type="number"
            problem={p.problem}
            hint="1 to 3650; empty: it does not expire."
          />
          <button type="submit">Make a SCIM token</button>
        </form>
      )}
    </section>
  );
}

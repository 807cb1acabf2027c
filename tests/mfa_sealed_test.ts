/**
 * With KEY_ENCRYPTION_KEY set, an authenticator's key is stored sealed (never in clear), and sign-ins still
 * check its codes. A service of its own, on a database of its own.
 */
import assert from "node:assert/strict";
import {
  challengeOf,
  isolatedDatabase,
  newVerifier,
  REDIRECT_URI,
  startWith,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { totp } from "./mfa_support.ts";

test("KEY_ENCRYPTION_KEY seals the TOTP key at rest; its codes still sign in", async () => {
  const db = await isolatedDatabase();
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const svc = await startWith({ ...db.env, KEY_ENCRYPTION_KEY: key });
  try {
    const base = svc.url;
    const json = async (res: Response, status: number) => {
      const text = await res.text();
      assert.equal(res.status, status, text);
      return text ? JSON.parse(text) : undefined;
    };
    const call = async (token: string, method: string, path: string, body?: unknown) =>
      await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const system = await systemTokenAt(base);
    const project = await json(
      await call(system, "POST", "/api/v1/projects", { name: "Sealed", redirect_uris: [REDIRECT_URI] }),
      201,
    );
    const admin = project.admin_client;
    const email = "sealed@example.com", password = "correct horse battery";
    const user = await json(
      await call(system, "POST", `/api/v1/projects/${project.id}/users`, {
        display_name: "Sealed",
        email,
        password,
      }),
      201,
    );

    /** A login in a fresh cookie jar: the password, then (when asked) the code; answers the tokens. */
    const login = async (code?: () => Promise<string>) => {
      const jar = new Map<string, string>();
      const send = async (path: string, form?: Record<string, string>) => {
        const res = await fetch(`${base}${path}`, {
          method: form ? "POST" : "GET",
          redirect: "manual",
          headers: {
            cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
            ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          },
          body: form ? new URLSearchParams(form).toString() : undefined,
        });
        for (const line of res.headers.getSetCookie()) {
          const pair = line.split(";")[0];
          jar.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
        }
        return res;
      };
      const verifier = newVerifier();
      const page = await (await send(`/authorize?${new URLSearchParams({
        client_id: admin.client_id,
        redirect_uri: REDIRECT_URI,
        response_type: "code",
        code_challenge: await challengeOf(verifier),
        code_challenge_method: "S256",
        scope: "openid",
      })}`)).text();
      const field = (html: string, name: string) =>
        new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
      const hidden = { request_id: field(page, "request_id"), csrf: field(page, "csrf") };
      let res = await send("/authorize", { ...hidden, email, password });
      if (code) {
        assert.equal(res.status, 200);
        await res.body?.cancel();
        res = await send("/authorize/mfa", { ...hidden, code: await code() });
      }
      assert.equal(res.status, 303, await res.text());
      const location = new URL(res.headers.get("location")!);
      const tokens = await fetch(`${base}/api/v1/tokens`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          client_id: admin.client_id,
          code: location.searchParams.get("code")!,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        }).toString(),
      });
      return await json(tokens, 200);
    };

    const { access_token } = await login();
    const { secret } = await json(
      await call(access_token, "POST", "/api/v1/users/current/totp", { current_password: password }),
      200,
    );
    await json(
      await call(access_token, "POST", "/api/v1/users/current/totp/confirm", { code: await totp(secret) }),
      200,
    );
    const [row] = await svc.db.sql<{ secret: string | null; sealed: Uint8Array | null }[]>`
      select secret, secret_sealed as sealed from totp_factors where user_id = ${user.id}`;
    assert.equal(row.secret, null);
    assert.ok(row.sealed && row.sealed.length > 29);
    assert.ok(!new TextDecoder().decode(row.sealed).includes(secret));
    const signedIn = await login(() => totp(secret, Date.now() + 30_000));
    const claims = JSON.parse(atob(signedIn.id_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    assert.deepEqual(claims.amr, ["pwd", "otp", "mfa"]);
  } finally {
    await svc.close();
    await db.drop();
  }
});

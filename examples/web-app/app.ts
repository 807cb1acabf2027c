/**
 * A small web app that logs its users in with openid-client against the service: discovery from
 * `${SERVICE_URL}/.well-known/openid-configuration`, the authorization code flow with PKCE, state and nonce,
 * the ID token's claims and userinfo shown, a refresh, single sign-on (a second login in the same browser
 * shows no form), and RP-initiated logout (the end_session_endpoint with id_token_hint and
 * post_logout_redirect_uri).
 *
 * Its own sessions live in memory, named by an HttpOnly cookie: a real app keeps them in its store.
 */
import { oidc } from "../deps.ts";

export type AppOptions = {
  /** The service's PUBLIC_URL: the issuer. */
  serviceUrl: string;
  /** A public client of the project (token_endpoint_auth_method "none"). */
  clientId: string;
  /**
   * Where this app is reached, e.g. http://localhost:3000: `${appUrl}/callback` and `${appUrl}/signed-out`
   * are registered on the project.
   */
  appUrl: string;
};

type Tokens = oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;

type Session = {
  /** Between /login and /callback: what proves that the answer is for this login. */
  pending?: { verifier: string; state: string; nonce: string };
  tokens?: Tokens;
  userinfo?: oidc.UserInfoResponse;
  refreshes: number;
  /** Between /logout and /signed-out. */
  logoutState?: string;
};

const COOKIE = "example_app_session";

export async function createApp(options: AppOptions): Promise<(req: Request) => Promise<Response>> {
  const appUrl = options.appUrl.replace(/\/+$/, "");
  const redirectUri = `${appUrl}/callback`;
  const postLogoutRedirectUri = `${appUrl}/signed-out`;
  // Discovery; a public client proves its logins with PKCE, so it authenticates with None().
  const config = await oidc.discovery(
    new URL(options.serviceUrl),
    options.clientId,
    undefined,
    oidc.None(),
    // http is allowed only for a service on http://localhost or 127.0.0.1, as in development.
    options.serviceUrl.startsWith("http:") ? { execute: [oidc.allowInsecureRequests] } : undefined,
  );
  const sessions = new Map<string, Session>();

  function sessionOf(req: Request): { id: string; session: Session; isNew: boolean } {
    const id = /(?:^|;\s*)example_app_session=([^;]+)/.exec(req.headers.get("cookie") ?? "")?.[1];
    const session = id ? sessions.get(id) : undefined;
    if (id && session) return { id, session, isNew: false };
    const fresh = crypto.randomUUID();
    const created: Session = { refreshes: 0 };
    sessions.set(fresh, created);
    return { id: fresh, session: created, isNew: true };
  }

  function withCookie(res: Response, id: string, isNew: boolean): Response {
    if (isNew) res.headers.append("set-cookie", `${COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax`);
    return res;
  }

  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const { id, session, isNew } = sessionOf(req);
    const route = `${req.method} ${url.pathname}`;
    try {
      switch (route) {
        case "GET /":
          return withCookie(page("Example app", home(session)), id, isNew);

        case "GET /login": {
          // 1. Off to the service's login page, with a fresh verifier, state and nonce kept in our session.
          const pending = {
            verifier: oidc.randomPKCECodeVerifier(),
            state: oidc.randomState(),
            nonce: oidc.randomNonce(),
          };
          session.pending = pending;
          const login = oidc.buildAuthorizationUrl(config, {
            redirect_uri: redirectUri,
            scope: "openid profile email",
            code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
            code_challenge_method: "S256",
            state: pending.state,
            nonce: pending.nonce,
            // prompt=login asks for the password even when the browser is signed in to the service.
            ...(url.searchParams.get("prompt") === "login" ? { prompt: "login" } : {}),
          });
          return withCookie(redirect(login.href), id, isNew);
        }

        case "GET /callback": {
          // 2. Back from the service: openid-client checks state, iss, the code exchange with PKCE, and the
          // ID token (signature from the JWKS, issuer, audience, expiry, nonce, at_hash).
          const pending = session.pending;
          if (!pending) {
            return withCookie(page("Not expected", "<p>No login was started here.</p>", 400), id, isNew);
          }
          session.pending = undefined;
          const callback = new URL(`${redirectUri}${url.search}`);
          const error = callback.searchParams.get("error");
          if (error) {
            return withCookie(
              page("Login failed", `<p>The service answered ${escape(error)}.</p>`, 400),
              id,
              isNew,
            );
          }
          const tokens = await oidc.authorizationCodeGrant(config, callback, {
            pkceCodeVerifier: pending.verifier,
            expectedState: pending.state,
            expectedNonce: pending.nonce,
            idTokenExpected: true,
          });
          session.tokens = tokens;
          session.refreshes = 0;
          session.userinfo = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
          return withCookie(redirect(`${appUrl}/`), id, isNew);
        }

        case "POST /refresh": {
          // 3. A refresh: a new access token, a new refresh token (the old one is spent) and a new ID token.
          if (!session.tokens?.refresh_token) return redirect(`${appUrl}/`);
          const fresh = await oidc.refreshTokenGrant(config, session.tokens.refresh_token);
          session.tokens = fresh;
          session.refreshes++;
          session.userinfo = await oidc.fetchUserInfo(config, fresh.access_token, fresh.claims()!.sub);
          return redirect(`${appUrl}/`);
        }

        case "POST /logout": {
          // 4. RP-initiated logout: the service ends its browser session and the refresh tokens it made, then
          // sends the browser back to /signed-out with our state.
          const idToken = session.tokens?.id_token;
          session.tokens = undefined;
          session.userinfo = undefined;
          if (!idToken) return redirect(`${appUrl}/`);
          session.logoutState = oidc.randomState();
          const end = oidc.buildEndSessionUrl(config, {
            id_token_hint: idToken,
            post_logout_redirect_uri: postLogoutRedirectUri,
            state: session.logoutState,
          });
          return redirect(end.href);
        }

        case "GET /signed-out": {
          const ok = session.logoutState !== undefined &&
            url.searchParams.get("state") === session.logoutState;
          session.logoutState = undefined;
          return withCookie(
            page(
              ok ? "Signed out" : "Not expected",
              ok
                ? `<p>You are signed out of the app and of the service.</p><p><a href="/">Home</a></p>`
                : "<p>No logout was started here.</p>",
              ok ? 200 : 400,
            ),
            id,
            isNew,
          );
        }

        default:
          return page("Not found", "<p>Nothing here.</p>", 404);
      }
    } catch (err) {
      // openid-client's errors name what failed (a state mismatch, an invalid_grant, …): logged, not shown.
      console.error(`${route}:`, err);
      return withCookie(
        page("Something failed", `<p>See the app's log.</p><p><a href="/">Home</a></p>`, 502),
        id,
        isNew,
      );
    }
  };
}

/** The home page: a sign-in link, or who is signed in with the ID token's claims and userinfo. */
function home(session: Session): string {
  if (!session.tokens) {
    return `<p>You are not signed in.</p><p><a href="/login">Sign in</a></p>`;
  }
  const claims = session.tokens.claims()!;
  return `
    <p>Signed in as <strong id="name">${escape(String(claims.name ?? claims.sub))}</strong>.</p>
    <h2>ID token claims</h2>
    <pre id="claims">${escape(JSON.stringify(claims, null, 2))}</pre>
    <h2>Userinfo</h2>
    <pre id="userinfo">${escape(JSON.stringify(session.userinfo, null, 2))}</pre>
    <p>Access token expires in ${session.tokens.expiresIn() ?? "?"} s; refreshed
      <span id="refreshes">${session.refreshes}</span> times.</p>
    <form method="post" action="/refresh"><button>Refresh the tokens</button></form>
    <form method="post" action="/logout"><button>Sign out</button></form>`;
}

function page(title: string, body: string, status = 200): Response {
  return new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body><h1>${escape(title)}</h1>${body}</body></html>`,
    { status, headers: { "content-type": "text/html; charset=utf-8" } },
  );
}

function redirect(location: string): Response {
  return new Response(null, { status: 303, headers: { location } });
}

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

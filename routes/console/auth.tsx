/**
 * Signing in to the console through the service's own authorization code + PKCE flow (the project's built-in
 * console client), the callback that opens a console session, signing out (the refresh token revoked), and the
 * first operator's one-time setup link.
 */
import { getCookie } from "hono/cookie";
import { encodeBase64Url } from "../../domain/shared/base64.ts";
import { consoleClientId, consoleRedirectUri } from "../../domain/console/client.ts";
import {
  closeConsoleSession,
  consoleSession,
  csrfMatches,
  openConsoleSession,
} from "../../domain/console/sessions.ts";
import { completeSetup, type SetupLink, setupLinkOf } from "../../domain/system/first_operator.ts";
import { AppError } from "../../domain/shared/errors.ts";
import { newSecret } from "../../domain/shared/ids.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import type { App } from "../env.ts";
import { Field, Layout } from "./layout.tsx";
import {
  type C,
  dropCookie,
  html,
  pendingCookie,
  projectCookie,
  putCookie,
  revoke,
  safeNext,
  sessionCookie,
  tokenRequest,
} from "./session.ts";

const PENDING_TTL = 600;
/** How long the project of the last successful sign-in is remembered. */
const REMEMBER_TTL = 400 * 86_400;
const PROJECT_ID = /^[A-Za-z0-9_-]{1,100}$/;

async function challengeOf(verifier: string): Promise<string> {
  return encodeBase64Url(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))),
  );
}

/** Starts the authorization code flow for a project's console client. */
async function startSignIn(c: C, projectId: string, next: string, loginHint?: string) {
  const { publicUrl } = c.get("deps").config;
  const verifier = newSecret();
  const state = newSecret();
  putCookie(
    c,
    pendingCookie(c),
    JSON.stringify({ p: projectId, s: state, v: verifier, n: next }),
    PENDING_TTL,
  );
  // The project is remembered only once a sign-in to it succeeds (the callback): a link from anywhere to
  // ?project=… must not decide where this browser's next sign-in goes.
  c.header("Cache-Control", "no-store");
  return c.redirect(
    `/authorize?${new URLSearchParams({
      client_id: consoleClientId(projectId),
      redirect_uri: consoleRedirectUri(publicUrl),
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      state,
      ...(loginHint ? { login_hint: loginHint } : {}),
    })}`,
    302,
  );
}

/**
 * The console's own sign-in page: which project the sign-in is for (its ID, the one thing no other project can
 * share; a name is anyone's to choose, and looking one up for any ID given would tell names to whoever asks).
 * Without a remembered project it is the operators' (system) project: one button, no ID to type; another
 * project's ID can be given below.
 */
function SignInPage(p: { nonce: string; next: string; project?: string; message?: string; error?: string }) {
  const project = p.project && PROJECT_ID.test(p.project) ? p.project : SYSTEM_PROJECT_ID;
  return (
    <Layout nonce={p.nonce} title="Sign in">
      <h1>Sign in to the console</h1>
      {p.message && <p class="notice" role="status">{p.message}</p>}
      {p.error && <p class="alert" role="alert">{p.error}</p>}
      <div class="card narrow">
        <p id="signin-project">
          This sign-in is for the project with ID <code>{project}</code>
          {project === SYSTEM_PROJECT_ID ? " (the system project, where operators sign in)" : ""}.
        </p>
        <form method="get" action="/console/signin">
          <input type="hidden" name="next" value={p.next} />
          <input type="hidden" name="project" value={project} />
          <button type="submit">Continue to sign-in</button>
        </form>
      </div>
      <details open={p.error ? true : undefined}>
        <summary>Sign in to another project</summary>
        <form method="get" action="/console/signin">
          <input type="hidden" name="next" value={p.next} />
          <Field
            name="project"
            label="Project ID"
            value=""
            required
            hint="A project's administrators sign in to their project's ID; operators to system."
          />
          <button type="submit">Sign in to this project</button>
        </form>
      </details>
    </Layout>
  );
}

// ?project=… signs in to that project; after an ended session, the remembered project is used at once.
function signInPage(c: C) {
  const url = new URL(c.req.url);
  const next = safeNext(url.searchParams.get("next"));
  const asked = url.searchParams.get("project")?.trim();
  const remembered = getCookie(c, projectCookie(c));
  // An address to prefill on the login page (the operator just set up); anything else is dropped.
  const hint = url.searchParams.get("login_hint") ?? "";
  const loginHint = hint.length <= 100 && /^[^\s@]+@[^\s@]+$/.test(hint) ? hint : undefined;
  if (asked && PROJECT_ID.test(asked)) return startSignIn(c, asked, next, loginHint);
  if (asked !== undefined) {
    return html(
      c,
      (nonce) => <SignInPage nonce={nonce} next={next} error="That is not a project ID." />,
      400,
    );
  }
  if (remembered && PROJECT_ID.test(remembered) && !url.searchParams.has("signed_out")) {
    return startSignIn(c, remembered, next);
  }
  return html(c, (nonce) => (
    <SignInPage
      nonce={nonce}
      next={next}
      project={remembered}
      message={url.searchParams.has("signed_out") ? "You are signed out." : undefined}
    />
  ));
}

type Pending = { p: string; s: string; v: string; n: string };

/** The sign-in started in this browser (its cookie, dropped as it is read). */
function pendingOf(c: C): Pending | undefined {
  let pending: Pending | undefined;
  try {
    pending = JSON.parse(getCookie(c, pendingCookie(c)) ?? "null") ?? undefined;
  } catch { /* a mangled cookie: start again */ }
  dropCookie(c, pendingCookie(c));
  return pending;
}

/** The authorization server's answer: the tokens, then a console session and back to the wanted page. */
async function callback(app: App, c: C) {
  const url = new URL(c.req.url);
  const { sql, config } = c.get("deps");
  const pending = pendingOf(c);
  const again = (error: string) =>
    html(
      c,
      (nonce) => <SignInPage nonce={nonce} next={safeNext(pending?.n)} project={pending?.p} error={error} />,
      400,
    );
  if (!pending || url.searchParams.get("state") !== pending.s) {
    return again("This sign-in was not started in this browser, or took too long. Please sign in again.");
  }
  if (url.searchParams.get("error")) {
    return again(
      `The sign-in did not complete: ${url.searchParams.get("error_description") ?? "refused"}.`,
    );
  }
  if (url.searchParams.get("iss") !== config.publicUrl) {
    return again("The sign-in answer came from elsewhere.");
  }
  const tokens = await tokenRequest(app, c, {
    grant_type: "authorization_code",
    client_id: consoleClientId(pending.p),
    code: url.searchParams.get("code") ?? "",
    redirect_uri: consoleRedirectUri(config.publicUrl),
    code_verifier: pending.v,
  });
  if (!tokens) {
    return again("The sign-in could not be completed. Please sign in again.");
  }
  const secret = await openConsoleSession(sql, pending.p, tokens);
  putCookie(c, sessionCookie(c), secret, tokens.refresh_token_expires_in);
  putCookie(c, projectCookie(c), pending.p, REMEMBER_TTL);
  c.header("Cache-Control", "no-store");
  return c.redirect(safeNext(pending.n), 303);
}

// Signing out revokes the refresh token, which ends the login session and its access tokens at once.
async function signOut(app: App, c: C) {
  const { sql } = c.get("deps");
  const session = await consoleSession(sql, getCookie(c, sessionCookie(c)));
  const form = await c.req.parseBody();
  if (session && csrfMatches(session.secret, form.csrf)) {
    await revoke(app, c, session.projectId, session.refreshToken);
    await closeConsoleSession(sql, session.secret);
    dropCookie(c, sessionCookie(c));
  } else if (session) {
    return c.redirect("/console", 303);
  }
  return c.redirect("/console/signin?signed_out=1", 303);
}

async function showSetup(c: C) {
  const token = c.req.query("token") ?? "";
  const link = await setupLinkOf(c.get("deps").sql, token);
  return html(c, (nonce) => <SetupPage nonce={nonce} token={token} link={link} />, link ? 200 : 400);
}

/** What the setup page says of a refused field. */
function setupError(field: { field: string; issue: string } | undefined): string | undefined {
  return field?.field === "password"
    ? "The password must have at least 8 characters."
    : field?.field === "email"
    ? (field.issue.startsWith("a user")
      ? "A user of the system project has this email already."
      : "Enter a valid email address.")
    : undefined;
}

// The setup link is its own CSRF token: it is secret, single-use and bound to nothing else.
async function completeSetupForm(c: C) {
  const form = await c.req.parseBody();
  const text = (name: string) => typeof form[name] === "string" ? form[name] as string : "";
  const token = text("token");
  const email = text("email");
  let operator: string | null;
  try {
    operator = await completeSetup(c.get("deps").sql, token, text("password"), email);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const field = err.details?.[0];
    const link = field?.field === "token" ? undefined : await setupLinkOf(c.get("deps").sql, token);
    const error = setupError(field);
    return html(c, (nonce) => (
      <SetupPage
        nonce={nonce}
        token={token}
        link={link}
        email={email}
        error={error ? { field: field!.field, message: error } : undefined}
      />
    ), 400);
  }
  // On to the sign-in, the address prefilled: the operator types the password just chosen.
  const query = { project: SYSTEM_PROJECT_ID, ...(operator ? { login_hint: operator } : {}) };
  return c.redirect(`/console/signin?${new URLSearchParams(query)}`, 303);
}

export function registerConsoleAuth(app: App) {
  app.get("/console/signin", signInPage);
  app.get("/console/callback", (c) => callback(app, c));
  app.post("/console/signout", (c) => signOut(app, c));
  app.get("/console/setup", showSetup);
  app.post("/console/setup", completeSetupForm);
}

function SetupPage(
  p: {
    nonce: string;
    token: string;
    link: SetupLink | undefined;
    email?: string;
    error?: { field: string; message: string };
  },
) {
  const problem = (field: string) =>
    p.error?.field === field ? { message: p.error.message, fields: { [field]: p.error.message } } : null;
  const title = p.link === "create" ? "Create the first operator" : "Set up the first operator";
  return (
    <Layout nonce={p.nonce} title={title}>
      <h1>{title}</h1>
      {!p.link
        ? <p class="alert" role="alert">This setup link has expired or was already used.</p>
        : (
          <form method="post" action="/console/setup">
            <input type="hidden" name="token" value={p.token} />
            {p.link === "create" && (
              <>
                <p>
                  No operator can sign in to the console yet. The operator you create here signs in to the
                  system project and may administer every project.
                </p>
                <Field
                  name="email"
                  label="Your email"
                  type="email"
                  autocomplete="username"
                  value={p.email}
                  required
                  problem={problem("email")}
                />
              </>
            )}
            <Field
              name="password"
              label="Choose a password"
              type="password"
              autocomplete="new-password"
              required
              hint="At least 8 characters."
              problem={problem("password")}
            />
            <button type="submit">{p.link === "create" ? "Create and sign in" : "Save and sign in"}</button>
          </form>
        )}
    </Layout>
  );
}

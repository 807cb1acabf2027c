/**
 * GET/POST /authorize/signup: a login page's "Create an account", bound to that login as its form is (the
 * request, its CSRF token and the browser's cookie). A new user signed in goes on as after a password; one who
 * must confirm their address first, a registered address and a robot all see "check your mail".
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { loginRequestFor } from "../../domain/signin/login.ts";
import { HONEYPOT, signUp, type SignupErrors, signupRule } from "../../domain/signup/signup.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { linkSettings } from "../settings.ts";
import { continueAfterPassword } from "./flow.ts";
import { pageErrors, PageRefusal, retryAfter } from "./kit/errors.ts";
import { formLimit, formSettings, readForm } from "./kit/forms.ts";
import { startPage } from "./kit/headers.ts";
import { signupPage, signupSentPage } from "./views/signup.ts";

const OFF = "This application does not let you create an account here. Ask its team for one.";

/** The login request of the page (400 page when stale) and the project's sign-up rule (404 page when off). */
async function signupContext(c: Context<AppEnv>, bound: { request_id?: string; csrf?: string }) {
  const { sql, config } = c.get("deps");
  const req = await loginRequestFor(sql, bound, getCookie(c, formSettings(c).cookieName), config.publicUrl);
  const rule = await signupRule(sql, req.project_id);
  if (!rule) throw new PageRefusal(OFF, 404);
  return { req, rule };
}

const actionOf = (c: Context<AppEnv>) => `${c.get("deps").config.publicUrl}/authorize/signup`;

/** GET /authorize/signup?request_id=…&csrf=… */
async function showSignup(c: Context<AppEnv>): Promise<Response> {
  const bound = { request_id: c.req.query("request_id"), csrf: c.req.query("csrf") };
  const { req } = await signupContext(c, bound);
  const nonce = startPage(c, req.redirect_uri);
  return c.html(
    signupPage({
      nonce,
      action: actionOf(c),
      projectName: req.project_name,
      requestId: req.id,
      csrf: bound.csrf!,
      honeypot: HONEYPOT,
    }),
    200,
  );
}

/** POST /authorize/signup */
async function submitSignup(c: Context<AppEnv>): Promise<Response> {
  const form = await readForm(c, "The sign-up form was not sent as a form.");
  const { req, rule } = await signupContext(c, form);
  const nonce = startPage(c, req.redirect_uri);
  const fields = {
    email: form.email ?? "",
    name: form.name ?? "",
    password: form.password ?? "",
    password_repeat: form.password_repeat ?? "",
    website: form[HONEYPOT] ?? "",
  };
  const again = (status: 400 | 429, errors: SignupErrors, error?: string) =>
    c.html(
      signupPage({
        nonce,
        action: actionOf(c),
        projectName: req.project_name,
        requestId: req.id,
        csrf: form.csrf,
        honeypot: HONEYPOT,
        email: fields.email.slice(0, 100),
        name: fields.name.slice(0, 50),
        errors,
        error,
      }),
      status,
    );
  let outcome;
  try {
    outcome = await signUp(c.get("deps").sql, linkSettings(c), {
      rule,
      req,
      form: fields,
      request: requestInfo(c),
    });
  } catch (err) {
    const wait = retryAfter(err);
    if (wait === null) throw err;
    c.header("Retry-After", wait);
    return again(429, {}, `Too many attempts. Try again in ${wait} seconds.`);
  }
  if (outcome.kind === "invalid") return again(400, outcome.errors);
  if (outcome.kind === "mailed") {
    return c.html(signupSentPage({ nonce, projectName: req.project_name, email: outcome.email }), 200);
  }
  // Signed in with the password just chosen: the same way on as a password login's.
  return await continueAfterPassword(c, {
    nonce,
    req,
    csrf: form.csrf,
    userId: outcome.userId,
    step: outcome.secondStep,
  });
}

// Documented for the reference page; the handlers answer pages, not JSON.
const signupDoc: RouteConfig = {
  method: "get",
  path: "/authorize/signup",
  operationId: "signup",
  tags: ["Login"],
  summary: "The sign-up page of a login",
  description: 'Linked from the login page as "Create an account" when the project\'s `signup` is not ' +
    '`"off"`, with the login page\'s `request_id` and `csrf`, in the browser that opened it. A form for ' +
    'email, name and password (twice). docs/log-in-users.md, "Sign-up".',
  request: {
    query: z.object({
      request_id: z.string().openapi({ description: "The login page's request" }),
      csrf: z.string().openapi({ description: "The login page's CSRF token" }),
    }),
  },
  responses: {
    200: { description: "The sign-up page" },
    400: { description: "An error page: the login page expired or was opened in another browser" },
    404: { description: 'An error page: the project\'s `signup` is `"off"`' },
  },
};

const submitSignupDoc: RouteConfig = {
  method: "post",
  path: "/authorize/signup",
  operationId: "submitSignup",
  tags: ["Login"],
  summary: "Submit the sign-up form",
  description: "Creates a user of the project with the address, the name and the password, and no role. " +
    "With `require_verified_email`, the address is mailed a confirmation link and the page says " +
    '"check your mail"; the first code comes after the address is confirmed and the user signs in. Otherwise ' +
    "the user is signed in and the login goes on as after a password (a second factor's code or enrolment, " +
    "then the code). An address that already has an account gets a mail (no second user), and the page says " +
    '"check your mail" as for a new address that must be confirmed. A filled honeypot field answers the ' +
    "same and creates nothing (`signup.refused`). Throttled per network address and per email address.",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({
            request_id: z.string(),
            csrf: z.string(),
            email: z.string(),
            name: z.string(),
            password: z.string().openapi({ description: "At least 8 characters, at most 1024" }),
            password_repeat: z.string(),
            [HONEYPOT]: z.string().optional().openapi({ description: "The honeypot: humans leave it empty" }),
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description: '"Check your mail", or the second factor\'s page of a new user signed in',
    },
    303: { description: "A new user signed in: to `redirect_uri` with `code`, `state` and `iss`" },
    400: {
      description: "The form again with the error under its field (a weak password, a malformed address, " +
        "an address outside `signup.domains`, passwords that differ), or an error page; nothing created",
    },
    404: { description: 'An error page: the project\'s `signup` is `"off"`' },
    413: { description: "A form larger than 16 KiB: an error page" },
    429: {
      description:
        "Too many sign-ups from this network or for this address: the form again; see `Retry-After`",
    },
  },
};

export function registerSignupPages(app: App) {
  app.get("/authorize/signup", pageErrors(showSignup));
  app.post("/authorize/signup", formLimit("The sign-up form is too large."));
  app.post("/authorize/signup", pageErrors(submitSignup));
  app.openAPIRegistry.registerPath(signupDoc);
  app.openAPIRegistry.registerPath(submitSignupDoc);
}

/**
 * POST /authorize/mfa: the second step of a login, after a right password, for a user with a second factor. The
 * form is bound like the password's (its request, CSRF token and the browser's cookie); a wrong, spent or
 * expired code shows it again with the field's error, and repeated failures wait like failed passwords (429).
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { AuthorizePageError, loginRequestFor } from "../../domain/signin/login.ts";
import { hasSecondFactor, pendingTotp } from "../../domain/factors/mfa.ts";
import { awaitedLogin, checkSecondFactor, confirmLoginEnrolment } from "../../domain/factors/second_step.ts";
import type { App, AppEnv } from "../env.ts";
import { enrolInLoginPage, loginRecoveryCodesPage, secondFactorPage } from "./views/login.ts";
import { requestInfo } from "../request_info.ts";
import { startPage } from "./kit/headers.ts";
import { type Brand, brandFor } from "./kit/brand.ts";
import { pageErrors, retryAfter } from "./kit/errors.ts";
import { formSettings } from "./kit/forms.ts";
import { enrolPicture, finishLogin } from "./flow.ts";
import { mfaSettings } from "../settings.ts";
import { formLimit, readForm } from "./kit/forms.ts";

const WRONG = "That code is not right, or was already used. Try the current code from your app.";

const submitSecondFactorDoc: RouteConfig = {
  method: "post",
  path: "/authorize/mfa",
  operationId: "submitSecondFactor",
  tags: ["Login"],
  summary: "Submit the second step of a login",
  description:
    "Posted by the page shown after a right password to a user with an authenticator: a 6-digit TOTP code " +
    "(RFC 6238; each good once) or one of the user's recovery codes (each good once). A wrong, spent or " +
    "expired code answers the page again with the field's error; repeated failures answer 429 with " +
    '`Retry-After` (never a lockout). ID tokens then say `amr: ["pwd", "otp", "mfa"]` (`["fed", "otp", "mfa"]` ' +
    'and `idp` after an upstream provider) and `acr: "2"`; for a step-up or `max_age` re-authentication of a ' +
    'browser session, only what was presented at the new `auth_time`: `amr: ["otp"]`, `acr: "2"`.',
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({
            code: z.string().optional(),
            continue: z.literal("1").optional(),
            request_id: z.string(),
            csrf: z.string(),
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description:
        "Enrolling at sign-in (a `required` policy): the recovery codes, with a form that goes on " +
        "(`continue=1`)",
    },
    303: { description: "Success: to `redirect_uri` with `code`, `state` and `iss`" },
    400: { description: "The page again with the field's error, or an error page" },
    403: {
      description:
        "A project with `require_verified_email` whose user's address is not verified: a page that " +
        "offers to mail the verification link, and no code",
    },
    413: { description: "A form larger than 16 KiB: an error page" },
    429: { description: "Too many wrong codes; see `Retry-After`" },
  },
};

type LoginRequest = Awaited<ReturnType<typeof loginRequestFor>>;
type Pending = NonNullable<Awaited<ReturnType<typeof awaitedLogin>>>;
/** What every answer of this step shows: the form bound to its login request. */
type Step = {
  nonce: string;
  brand: Brand | null;
  action: string;
  projectName: string;
  requestId: string;
  csrf: string;
};

/** POST /authorize/mfa: a code of the user's factor, or the first code of a factor enrolled at sign-in. */
async function submitSecondFactor(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const form = await readForm(c);
  const req = await loginRequestFor(sql, form, getCookie(c, formSettings(c).cookieName), config.publicUrl);
  const pending = await awaitedLogin(sql, req.id);
  if (pending === undefined) {
    throw new AuthorizePageError(
      "This sign-in page has expired or was not opened in this browser. Go back to the application and start again.",
    );
  }
  const nonce = startPage(c, req.redirect_uri);
  const step: Step = {
    nonce,
    action: `${formSettings(c).action}/mfa`,
    ...(await brandFor(c, req.project_id, req.project_name)),
    requestId: form.request_id,
    csrf: form.csrf,
  };
  let amr: string[] | Response;
  if (pending.amr.includes("mfa")) {
    // The enrolment at sign-in is done and its recovery codes were shown: on to the application.
    amr = pending.amr;
  } else if (await hasSecondFactor(sql, req.project_id, pending.user_id)) {
    amr = await checkCode(c, step, req, pending, form.code ?? "");
  } else {
    return await confirmEnrolment(c, step, req, pending, form.code ?? "");
  }
  if (amr instanceof Response) return amr;
  const providerId = pending.provider_id;
  const done = await finishLogin(c, {
    nonce,
    req,
    csrf: form.csrf,
    userId: pending.user_id,
    amr,
    providerId,
  });
  return done instanceof Response ? done : c.redirect(done.location, 303);
}

/** The code of the user's factor: the methods it proves, or the page again with the field's error. */
async function checkCode(
  c: Context<AppEnv>,
  step: Step,
  req: LoginRequest,
  pending: Pending,
  code: string,
): Promise<string[] | Response> {
  const again = (error: string, status: 400 | 429) => c.html(secondFactorPage({ ...step, error }), status);
  if (!code.trim() || code.length > 40) return again("Enter the code from your authenticator app.", 400);
  let amr: string[] | null;
  try {
    amr = await checkSecondFactor(c.get("deps").sql, mfaSettings(c), {
      projectId: req.project_id,
      userId: pending.user_id,
      clientId: req.client_id,
      code,
      request: requestInfo(c),
      amr: pending.amr,
    });
  } catch (err) {
    const wait = retryAfter(err);
    if (wait === null) throw err;
    c.header("Retry-After", wait);
    return again(`Too many wrong codes. Try again in ${wait} seconds.`, 429);
  }
  return amr ?? again(WRONG, 400);
}

/** Enrolling at sign-in: the first code of the new key turns it on, and its recovery codes are shown. */
async function confirmEnrolment(
  c: Context<AppEnv>,
  step: Step,
  req: LoginRequest,
  pending: Pending,
  code: string,
): Promise<Response> {
  const { sql } = c.get("deps");
  const settings = mfaSettings(c);
  const userId = pending.user_id;
  const enrolment = await pendingTotp(sql, settings, { projectId: req.project_id, userId });
  if (!enrolment) {
    throw new AuthorizePageError(
      "This sign-in page has expired. Go back to the application and start again.",
    );
  }
  const codes = /^\d{6}$/.test(code.trim())
    ? await confirmLoginEnrolment(sql, settings, {
      requestId: req.id,
      projectId: req.project_id,
      userId,
      amr: pending.amr,
      code: code.trim(),
      request: requestInfo(c),
    })
    : null;
  if (codes === null) {
    const error = "That is not the app's current code. Check the app and try again.";
    return c.html(enrolInLoginPage({ ...step, ...enrolPicture(enrolment), error }), 400);
  }
  return c.html(loginRecoveryCodesPage({ ...step, codes: codes.recovery_codes }), 200);
}

export function registerSecondFactorRoutes(app: App) {
  app.post("/authorize/mfa", formLimit());
  app.post("/authorize/mfa", pageErrors(submitSecondFactor));
  app.openAPIRegistry.registerPath(submitSecondFactorDoc);
}

/**
 * POST /authorize/mfa: the second step of a login, after a right password, for a user with a second factor. The
 * form is bound like the password's (its request, CSRF token and the browser's cookie); a wrong, spent or
 * expired code shows it again with the field's error, and repeated failures wait like failed passwords (429).
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import { AuthorizePageError, loginRequestFor } from "../../domain/signin/login.ts";
import { hasSecondFactor, pendingTotp } from "../../domain/factors/mfa.ts";
import { awaitedLogin, checkSecondFactor, confirmLoginEnrolment } from "../../domain/factors/second_step.ts";
import { completeLogin } from "../../domain/signin/sso.ts";
import type { App, AppEnv } from "../env.ts";
import { enrolInLoginPage, loginRecoveryCodesPage, secondFactorPage } from "./views/login.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { newNonce, pageHeaders } from "./kit/headers.ts";
import { pageErrors, retryAfter, showError } from "./kit/errors.ts";
import { formSettings, LOGIN_FORM_LIMIT } from "./kit/forms.ts";
import { ssoSettings } from "../settings.ts";
import { enrolPicture } from "./flow.ts";
import { mfaSettings } from "../settings.ts";

const WRONG = "That code is not right, or was already used. Try the current code from your app.";

export function registerSecondFactorRoutes(app: App) {
  app.post(
    "/authorize/mfa",
    bodyLimit({
      maxSize: LOGIN_FORM_LIMIT,
      onError: (c) =>
        showError(c as Context<AppEnv>, new AuthorizePageError("The sign-in form is too large.", 413)),
    }),
  );
  app.post(
    "/authorize/mfa",
    pageErrors(async (c) => {
      const { sql, config } = c.var.deps;
      const { action, cookieName } = formSettings(c);
      const contentType = c.req.header("content-type") ?? "";
      if (!/^application\/x-www-form-urlencoded(;|$)/i.test(contentType)) {
        throw new AuthorizePageError("The sign-in form was not sent as a form.");
      }
      const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
      const req = await loginRequestFor(sql, form, getCookie(c, cookieName), config.publicUrl);
      const pending = await awaitedLogin(sql, req.id);
      if (pending === undefined) {
        throw new AuthorizePageError(
          "This sign-in page has expired or was not opened in this browser. Go back to the application and start again.",
        );
      }
      const nonce = newNonce();
      pageHeaders(c, nonce, req.redirect_uri);
      const again = (error: string, status: 400 | 429) =>
        c.html(
          secondFactorPage({
            nonce,
            action: `${action}/mfa`,
            projectName: req.project_name,
            requestId: form.request_id,
            csrf: form.csrf,
            error,
          }),
          status,
        );
      const userId = pending.user_id;
      const code = form.code ?? "";
      let amr: string[] | null = null;
      if (pending.amr.includes("mfa")) {
        // The enrolment at sign-in is done and its recovery codes were shown: on to the application.
        amr = pending.amr;
      } else if (await hasSecondFactor(sql, req.project_id, userId)) {
        if (!code.trim() || code.length > 40) {
          return again("Enter the code from your authenticator app.", 400);
        }
        try {
          amr = await checkSecondFactor(sql, mfaSettings(c), {
            projectId: req.project_id,
            userId,
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
        if (amr === null) return again(WRONG, 400);
      } else {
        // Enrolling at sign-in: the first code of the new key turns it on.
        const settings = mfaSettings(c);
        const enrolment = await pendingTotp(sql, settings, { projectId: req.project_id, userId });
        if (!enrolment) {
          throw new AuthorizePageError(
            "This sign-in page has expired. Go back to the application and start again.",
          );
        }
        const common = {
          nonce,
          action: `${action}/mfa`,
          projectName: req.project_name,
          requestId: form.request_id,
          csrf: form.csrf,
        };
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
          return c.html(
            enrolInLoginPage({
              ...common,
              ...enrolPicture(enrolment),
              error: "That is not the app's current code. Check the app and try again.",
            }),
            400,
          );
        }
        return c.html(loginRecoveryCodesPage({ ...common, codes: codes.recovery_codes }), 200);
      }
      const sso = ssoCookie(config.publicUrl);
      const done = await completeLogin(
        sql,
        req,
        userId,
        getCookie(c, sso.name),
        ssoSettings(c),
        requestInfo(c),
        null,
        amr,
      );
      if (done.browser) setCookie(c, sso.name, done.browser, sso.options(config.ssoTtl));
      return c.redirect(done.location, 303);
    }),
  );

  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/authorize/mfa",
    operationId: "submitSecondFactor",
    tags: ["Login"],
    summary: "Submit the second step of a login",
    description:
      "Posted by the page shown after a right password to a user with an authenticator: a 6-digit TOTP code " +
      "(RFC 6238; each good once) or one of the user's recovery codes (each good once). A wrong, spent or " +
      "expired code answers the page again with the field's error; repeated failures answer 429 with " +
      '`Retry-After` (never a lockout). ID tokens then say `amr: ["pwd", "otp", "mfa"]` and `acr: "2"`.',
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
      413: { description: "A form larger than 16 KiB: an error page" },
      429: { description: "Too many wrong codes; see `Retry-After`" },
    },
  });
}

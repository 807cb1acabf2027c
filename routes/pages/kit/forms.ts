/** The pages' forms: their size limit, how they are read, and where the login form posts. */
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { AuthorizePageError } from "../../../domain/signin/login.ts";
import type { AppEnv } from "../../env.ts";
import { browserCookie } from "./cookies.ts";
import { PageRefusal, showError } from "./errors.ts";

/** A login form is a few fields; anything larger is refused before it is read. */
export const LOGIN_FORM_LIMIT = 16 * 1024;

/** The login form's page and the cookie it is bound to, for the service's public URL. */
export function formSettings(c: Context<AppEnv>) {
  const { publicUrl } = c.get("deps").config;
  const secure = publicUrl.startsWith("https:");
  return { action: `${publicUrl}/authorize`, secure, cookieName: browserCookie(secure) };
}

/** Refuses a form larger than LOGIN_FORM_LIMIT with an error page (413), before its body is read. */
export const formLimit = (message = "The sign-in form is too large.") =>
  bodyLimit({
    maxSize: LOGIN_FORM_LIMIT,
    onError: (c) => showError(c as Context<AppEnv>, new PageRefusal(message, 413)),
  });

/** The fields of a form post; anything not sent as `application/x-www-form-urlencoded` is an error page. */
export async function readForm(
  c: Context<AppEnv>,
  refusal = "The sign-in form was not sent as a form.",
): Promise<Record<string, string>> {
  const contentType = c.req.header("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded(;|$)/i.test(contentType)) throw new AuthorizePageError(refusal);
  return Object.fromEntries(new URLSearchParams(await c.req.text()));
}

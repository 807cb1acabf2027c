/** The CSRF tokens of the pages that links open: derived from a cookie that binds the form to the browser. */
import { timingSafeEqual } from "node:crypto";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { encodeBase64Url } from "../../../domain/shared/base64.ts";
import { newSecret } from "../../../domain/shared/ids.ts";
import { hashSecret } from "../../../domain/shared/secrets.ts";
import type { AppEnv } from "../../env.ts";
import { browserCookie, cookieOptions } from "./cookies.ts";
/** The browser's cookie (set when missing) that the forms' CSRF tokens are derived from. */
export function browserOf(c: Context<AppEnv>): string {
  const secure = c.get("deps").config.publicUrl.startsWith("https:");
  const name = browserCookie(secure);
  let browser = getCookie(c, name);
  if (!browser || !/^[A-Za-z0-9_-]{43}$/.test(browser)) {
    browser = newSecret();
    setCookie(c, name, browser, cookieOptions(secure, 86_400));
  }
  return browser;
}

/** The CSRF token of a form for this browser. */
export const csrfOf = (browser: string) => encodeBase64Url(hashSecret(`account-page:${browser}`));

/** Whether a form's CSRF token is this browser's (compared in constant time). */
export function csrfMatches(c: Context<AppEnv>, presented: string | undefined): boolean {
  const secure = c.get("deps").config.publicUrl.startsWith("https:");
  const browser = getCookie(c, browserCookie(secure));
  if (!browser || !presented) return false;
  const a = hashSecret(csrfOf(browser));
  const b = hashSecret(presented);
  return timingSafeEqual(a, b);
}

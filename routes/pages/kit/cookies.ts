/** The cookies of the sign-in pages: the browser binding, the device, single sign-on. */

/**
 * The single sign-on cookie: it names the browser (the database keeps only its hash). On https it is a
 * `__Host-` cookie, which no sibling domain can plant; HttpOnly, SameSite=Lax, for the whole service (both
 * /authorize and /logout read it).
 */
export function ssoCookie(publicUrl: string) {
  const secure = publicUrl.startsWith("https:");
  return {
    name: secure ? "__Host-acs_sso" : "acs_sso",
    options: (maxAge: number) => ({ httpOnly: true, sameSite: "Lax", secure, path: "/", maxAge }) as const,
  };
}

/** Binds a login form to the browser (the password's and the second step's). On https it is a `__Host-` cookie, which no sibling domain can plant. */
export const browserCookie = (secure: boolean) => secure ? "__Host-acs_browser" : "acs_browser";

/** Names a browser that signed in before, so that its failed logins count apart (see domain/signin/devices.ts). */
export const deviceCookie = (secure: boolean) => secure ? "__Host-acs_device" : "acs_device";

/** Both cookies are sent only to /authorize, except that a `__Host-` cookie must have Path=/. */
export const cookieOptions = (secure: boolean, maxAge: number) =>
  ({ httpOnly: true, sameSite: "Lax", secure, path: secure ? "/" : "/authorize", maxAge }) as const;

/**
 * Binds the device grant's verification pages (/device) to the browser that entered the code: its forms, the
 * login's callback and the confirmation. On https a `__Host-` cookie; else sent to /device only.
 */
export const verificationCookie = (secure: boolean) => ({
  name: secure ? "__Host-acs_device_flow" : "acs_device_flow",
  options: {
    httpOnly: true,
    sameSite: "Lax",
    secure,
    path: secure ? "/" : "/device",
    maxAge: 3_600,
  } as const,
});

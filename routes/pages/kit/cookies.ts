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

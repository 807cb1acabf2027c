/**
 * Common public mail domains: anyone can get an address there, so no organization may claim one (its domains
 * say who belongs to it). The list holds the largest free mailbox providers, from the lists that sign-up forms
 * use to tell work addresses from personal ones: github.com/jgillich/free-email-domains (MIT; providers free to
 * anyone, with MX records) and the HubSpot knowledge base's "domains blocked by the forms' email-domains-to-block
 * feature". It is not all of them (those lists hold thousands): it refuses the mistakes an admin will make, not a
 * determined one, who gains nothing by it but members from an address anyone may hold.
 */

/** Providers whose brand is the first label under any country's suffix: gmx.de, yahoo.co.jp, hotmail.fr. */
const BRANDS = new Set([
  "aol",
  "gmail",
  "gmx",
  "googlemail",
  "hotmail",
  "icloud",
  "outlook",
  "protonmail",
  "rocketmail",
  "yahoo",
  "yandex",
  "ymail",
  "zoho",
]);

/** Domains of their own (no brand pattern), as providers publish them. */
const DOMAINS = new Set([
  "126.com",
  "139.com",
  "163.com",
  "188.com",
  "189.cn",
  "aim.com",
  "bk.ru",
  "daum.net",
  "fastmail.com",
  "fastmail.fm",
  "free.fr",
  "hanmail.net",
  "hey.com",
  "hushmail.com",
  "inbox.ru",
  "interia.pl",
  "laposte.net",
  "libero.it",
  "list.ru",
  "live.be",
  "live.ca",
  "live.co.uk",
  "live.com",
  "live.com.au",
  "live.de",
  "live.dk",
  "live.fr",
  "live.it",
  "live.jp",
  "live.nl",
  "live.no",
  "live.se",
  "mac.com",
  "mail.com",
  "mail.ru",
  "me.com",
  "msn.com",
  "naver.com",
  "o2.pl",
  "onet.pl",
  "orange.fr",
  "pm.me",
  "posteo.de",
  "proton.me",
  "qq.com",
  "rambler.ru",
  "rediffmail.com",
  "seznam.cz",
  "sina.com",
  "sina.cn",
  "sohu.com",
  "t-online.de",
  "tuta.io",
  "tutanota.com",
  "tutanota.de",
  "web.de",
  "wp.pl",
  "ya.ru",
  "yeah.net",
]);

/** The second level of a country's suffix, as in `co.uk`, `com.br`, `ne.jp`. */
const SECOND_LEVEL = new Set(["co", "com", "net", "org", "ne", "or"]);

/**
 * Whether `domain` (lower-cased) is a public mail domain, or a name under one (`mail.gmail.com`): one of the
 * list, or a brand of the list under one label (`gmx.net`, `yahoo.fr`) or a country's two (`yahoo.co.uk`).
 */
export function isPublicMailDomain(domain: string): boolean {
  const labels = domain.split(".");
  for (let i = 0; i < labels.length - 1; i++) {
    const rest = labels.slice(i);
    if (DOMAINS.has(rest.join("."))) return true;
    if (!BRANDS.has(rest[0])) continue;
    const suffix = rest.slice(1);
    if (suffix.length === 1 || (suffix.length === 2 && SECOND_LEVEL.has(suffix[0]))) return true;
  }
  return false;
}

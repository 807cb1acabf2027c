/**
 * A readable name for a browser's User-Agent header: "Firefox 128 on Linux", "Safari on iPhone", "Chrome 120 on
 * Windows". Pure and forgiving: what it does not recognise reads "Unknown browser", and the pages keep the raw
 * header as a title for those who want it.
 */

/** The browser, most specific first (Edge and Opera say "Chrome", Chrome says "Safari"). */
const BROWSERS: [RegExp, string, boolean][] = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, "Edge", true],
  [/\b(?:OPR|OPiOS)\/(\d+)/, "Opera", true],
  [/\bSamsungBrowser\/(\d+)/, "Samsung Internet", true],
  [/\bVivaldi\/(\d+)/, "Vivaldi", true],
  [/\bYaBrowser\/(\d+)/, "Yandex Browser", true],
  [/\b(?:Firefox|FxiOS)\/(\d+)/, "Firefox", true],
  [/\bCriOS\/(\d+)/, "Chrome", true],
  [/(?:\b|Headless)Chrom(?:e|ium)\/(\d+)/, "Chrome", true],
  [/\bVersion\/(\d+)(?:\.\d+)*.*\bSafari\//, "Safari", false],
  [/\bAppleWebKit\/.*\b(?:Mobile|Safari)\b/, "Safari", false],
  [/\bcurl\/(\d+)/, "curl", true],
  [/\bDeno\/(\d+)/, "Deno", true],
  [/\bNode\.js\/(\d+)/, "Node.js", true],
];

/** The system, most specific first (Android says "Linux", iOS says "like Mac OS X"). */
const SYSTEMS: [RegExp, string][] = [
  [/\biPhone\b/, "iPhone"],
  [/\biPad\b/, "iPad"],
  [/\biPod\b/, "iPod"],
  [/\bAndroid\b/, "Android"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bWindows\b/, "Windows"],
  [/\bMac OS X\b|\bMacintosh\b/, "macOS"],
  [/\bUbuntu\b/, "Ubuntu"],
  [/\bLinux\b|\bX11\b/, "Linux"],
];

/** "Firefox 128 on Linux", "Safari on iPhone"; "Unknown browser" for an empty or unrecognised header. */
export function readableUserAgent(ua: string | null | undefined): string {
  if (!ua) return "Unknown browser";
  let browser: string | null = null;
  for (const [re, name, versioned] of BROWSERS) {
    const m = re.exec(ua);
    if (!m) continue;
    // Safari's own version ("Version/17.4") reads poorly next to the system's; the name is enough.
    browser = versioned && m[1] ? `${name} ${m[1]}` : name;
    break;
  }
  const system = SYSTEMS.find(([re]) => re.test(ua))?.[1] ?? null;
  if (browser && system) return `${browser} on ${system}`;
  if (browser) return browser;
  if (system) return `A browser on ${system}`;
  return "Unknown browser";
}

/**
 * How every browser test finds and starts Chromium: Debian's (/usr/bin/chromium), which playwright-core drives;
 * it never downloads a browser of its own.
 */
import { chromium } from "./browser_deps.ts";

export const CHROMIUM = "/usr/bin/chromium";

/** Whether Chromium is there: without it the browser tests are skipped. */
export const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();

/** Headless Chromium, as every browser test starts it. */
export const launchChromium = () =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });

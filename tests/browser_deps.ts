/**
 * The browser driver, apart from tests/deps.ts: loading playwright-core costs a test file about half a second
 * of CPU, and only the browser tests need it (every test file loads tests/deps.ts through tests/helpers.ts).
 * Pinned here for the same reason as tests/deps.ts: `deno task start` never downloads it.
 */
export { type Browser, chromium, type Page } from "npm:playwright-core@1.65.1";

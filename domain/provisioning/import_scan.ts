/**
 * A user import's body measured before it is parsed (routes/api/provisioning/users_import.ts). The body may be
 * 16 MiB and the service's heap is capped (HEAP_LIMIT_MB, 128 MB by default): parsed whole, 16 MiB of `[[],[],…]`
 * is eight million arrays and some 230 MiB, and JSON lines of only `\n` split into sixteen million strings. One
 * pass over the text, outside strings (honouring their escapes), counts what the parse would build and refuses
 * the body before the parse when it exceeds what an import of `IMPORT_SCAN.users` users can hold:
 *
 * - users: elements of the body's array (or of the arrays directly in its top-level object, `users`), or
 *   non-blank lines of JSON lines (the Firebase line aside): at most 10,000;
 * - one user (an element, a line): at most 64 KiB of text (a user's properties are at most 4 KB);
 * - values: the brackets, braces, commas and colons of the whole body, at most 1,500,000 (about 150 a user; a
 *   parse of that many empty arrays holds about 30 MB).
 *
 * Pure: no I/O. Returns null when the body is within the limits, or what is wrong, for a 400 on `body`.
 */
import { createGate } from "../accounts/hash_gate.ts";

/**
 * One import at a time per process: its body (up to 16 MiB) and its parse (up to about 30 MB) are held while it
 * runs, and two of them beside the sign-ins would crowd the capped heap. A second one meanwhile is 429
 * `too_many_requests` (Retry-After: 1); a client retries when the first has answered.
 */
export const IMPORT_GATE = createGate(
  1,
  0,
  "another user import is running in this process: retry when it has answered",
);

export const IMPORT_SCAN = { users: 10_000, userBytes: 64 * 1024, values: 1_500_000 } as const;

export type ScanIssue = { issue: string; description: string };

const OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d, OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c, COLON = 0x3a, QUOTE = 0x22, BACKSLASH = 0x5c, NEWLINE = 0x0a;

const tooManyValues = (): ScanIssue => ({
  issue:
    `holds more than ${IMPORT_SCAN.values.toLocaleString("en")} JSON values (brackets, braces, commas, ` +
    "colons)",
  description: "the body holds more JSON values than an import of 10,000 users can: send fewer in a request",
});
const tooManyUsers = (): ScanIssue => ({
  issue: `at most ${IMPORT_SCAN.users} users`,
  description: `an import takes at most ${IMPORT_SCAN.users} users`,
});
const tooLarge = (where: string): ScanIssue => ({
  issue: `${where} is larger than ${IMPORT_SCAN.userBytes / 1024} KiB`,
  description: `${where} is larger than ${IMPORT_SCAN.userBytes / 1024} KiB: no user is`,
});

/**
 * A JSON body (an array of users, or `{"users": [...], "firebase": {...}}`) measured. A text that is not JSON
 * may pass (its parse then fails); one whose strings the scan misreads is not JSON either, so the count of what
 * a successful parse builds is exact.
 */
export function scanJson(text: string): ScanIssue | null {
  let values = 0;
  let depth = 0;
  /** Whether the container at each depth is a users array: the top-level array, or an array in the top object. */
  const usersArray: boolean[] = [];
  let topIsObject = false;
  let users = 0;
  /** Where the current element of a users array started, or -1 between elements. */
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    if (start >= 0 && i - start > IMPORT_SCAN.userBytes) return tooLarge("a user");
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE || c === NEWLINE) inString = false; // JSON strings hold no raw newline
      continue;
    }
    const inUsers = depth > 0 && usersArray[depth - 1];
    if (inUsers && start < 0 && c > 0x20 && c !== COMMA && c !== CLOSE_ARRAY) {
      start = i; // an element's first character
      if (++users > IMPORT_SCAN.users) return tooManyUsers();
    }
    switch (c) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        if (++values > IMPORT_SCAN.values) return tooManyValues();
        if (depth === 0) topIsObject = c === OPEN_OBJECT;
        usersArray[depth] = c === OPEN_ARRAY && (depth === 0 || (depth === 1 && topIsObject));
        depth++;
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        if (inUsers) start = -1; // the users array's end
        if (depth > 0) depth--;
        break;
      case COMMA:
        if (++values > IMPORT_SCAN.values) return tooManyValues();
        if (inUsers) start = -1;
        break;
      case COLON:
        if (++values > IMPORT_SCAN.values) return tooManyValues();
        break;
    }
  }
  return null;
}

/**
 * JSON lines measured without splitting them: non-blank lines (a first `{"firebase": …}` line aside, which the
 * caller reads) at most `IMPORT_SCAN.users` + 1, each at most `IMPORT_SCAN.userBytes`, and the values of all
 * within the budget.
 */
export function scanJsonLines(text: string): ScanIssue | null {
  let lines = 0;
  let values = 0;
  for (let from = 0; from < text.length;) {
    let end = text.indexOf("\n", from);
    if (end < 0) end = text.length;
    if (end - from > IMPORT_SCAN.userBytes) return tooLarge(`line ${lineNumber(text, from)}`);
    let blank = true;
    let inString = false;
    for (let i = from; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x20) blank = false;
      if (inString) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === OPEN_ARRAY || c === OPEN_OBJECT || c === COMMA || c === COLON) {
        if (++values > IMPORT_SCAN.values) return tooManyValues();
      }
    }
    // One line more than the users: the Firebase parameters' line.
    if (!blank && ++lines > IMPORT_SCAN.users + 1) return tooManyUsers();
    from = end + 1;
  }
  return null;
}

/** The 1-based number of the line at `offset` (only for a message: counted once, when refusing). */
function lineNumber(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

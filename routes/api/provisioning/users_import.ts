/**
 * `POST /api/v1/projects/{project_id}/users/import`: users from another system, with the password hashes it made,
 * as a JSON array (or `{"users": [...], "firebase": {...}}`) or as JSON lines. The route reads the body and checks
 * each line against its schema; the domain does the rest, line by line (domain/provisioning/import_users.ts).
 */
import type { Context } from "hono";
import { type ImportLine, importUsers, type LineError } from "../../../domain/provisioning/import_users.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import { IMPORT_GATE, scanJson, scanJsonLines } from "../../../domain/provisioning/import_scan.ts";
import { ProjectIdParam } from "../../../openapi/fields.ts";
import {
  FirebaseHashParameters,
  type FirebaseHashParameters as FirebaseParams,
  IMPORT_MAX_USERS,
  ImportUserLine,
  ImportUsersRequest,
  ImportUsersResult,
} from "../../../openapi/users.ts";
import type { App, AppEnv } from "../../env.ts";
import { zodDetails } from "../../errors.ts";
import { deeperThan, guardedRoute, MAX_DEPTH } from "../operation.ts";
import { jsonResponse } from "../responses.ts";
import { unknownFieldsError } from "../unknown_fields.ts";

const BODY_RULES =
  "At most 10,000 users and 16 MiB a request, each user (an element, a line) at most 64 KiB, and at most " +
  "1,500,000 JSON values (brackets, braces, commas, colons) in all, measured before the body is parsed (400 " +
  "`invalid_params` on `body` beyond them, 413 beyond the size): send a larger directory in several requests. " +
  "One import runs at a time per server process: another meanwhile is 429 `too_many_requests` (retry after " +
  "`Retry-After`).";

export const importUsersRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users/import",
  operationId: "importUsers",
  tags: ["Users"],
  summary: "Import users",
  permission: "users:create",
  description: "Creates users from another system, keeping the password hashes it made: bcrypt, Argon2 " +
    "(argon2id, argon2i), scrypt, PBKDF2 (PHC and Django), Firebase's scrypt, and salted SHA-256, SHA-512 and " +
    "MD5 (weak: rehash them soon). Each hash is checked at the user's sign-in in its own scheme and replaced by " +
    "the service's argon2id at the first success; parameters that would make a sign-in costly (bcrypt cost " +
    "over 13, scrypt over 64 MiB or N·r·p over 2^20, PBKDF2 over 2,000,000 iterations, Argon2 over 64 MiB or " +
    "m·t over 262,144 KiB: at most about a second of CPU and 64 MiB each) are " +
    'refused. The body is `application/json` (an array of users, or `{"users": [...], "firebase": {...}}`) ' +
    "or JSON lines (`application/x-ndjson` or `application/jsonl`, one user a line, the first line " +
    '`{"firebase": {...}}` when Firebase hashes need it). ' + BODY_RULES + " Each line is checked alone: a " +
    "line that is not a user object, has unknown fields, a malformed hash or one missing its scheme's " +
    "parameters, an email or external id of an earlier line or of an existing user, or a role the caller cannot " +
    "give (it must hold every permission of it, as for `createUser`) is refused with its reason, and the others " +
    "are created, each with its `user.created` event (`details.how`: `import`) in the same transaction. A plain " +
    "`password` is not taken (no password is hashed at import). The answer lists every line in order. Users " +
    "are written 1,000 to a transaction: should one fail after earlier ones were committed, the answer lists " +
    "the created lines and refuses each line not written with `system_error` (send them again: lines already " +
    "written are refused as `user_email_already_used` or `user_external_id_already_used`, never duplicated).",
  request: {
    params: ProjectIdParam,
    body: {
      required: true,
      description: "The users",
      content: {
        "application/json": { schema: ImportUsersRequest },
        // JSON lines: each line one ImportUserLine; a first line `{"firebase": {...}}` gives the parameters.
        "application/x-ndjson": { schema: ImportUserLine },
      },
    },
  },
  responses: { 200: jsonResponse(ImportUsersResult, "Every line's result, in order") },
  errors: ["invalid_params", "too_many_requests"],
});
importUsersRoute.responses[413].description = "`invalid_params`: the request body is larger than 16 MiB";

export function registerUserImportRoutes(app: App) {
  // The body is read here, not by a validator: each line is checked alone (one bad line refuses only itself), so
  // the document shows the schema and the handler applies it line by line.
  const { middleware: _, ...documented } = importUsersRoute;
  app.openAPIRegistry.registerPath(documented);
  app.openapi({ ...importUsersRoute, hide: true, request: { params: ProjectIdParam } }, async (c) => {
    const { project_id } = c.req.valid("param");
    // One import at a time per process (a second is 429): see IMPORT_GATE.
    const result = await IMPORT_GATE.run(async () => {
      const body = await readBody(c);
      const { sql, log } = c.get("deps");
      return await importUsers(
        sql,
        c.get("principal"),
        project_id,
        body,
        (err) =>
          log.error(
            "user import: a chunk failed after earlier ones were written; its lines answered system_error",
            {
              project_id,
              error: err instanceof Error ? err.message : String(err),
            },
          ),
      );
    });
    return c.json(result, 200);
  });
}

const invalid = (field: string, issue: string, description?: string) =>
  new AppError("invalid_params", { description, details: [{ field, issue }] });

/** The request's users, each with its line number, and the Firebase parameters, or 400 for the whole request. */
async function readBody(
  c: Context<AppEnv>,
): Promise<{ lines: ImportLine[]; firebase: FirebaseParams | null }> {
  let text: string;
  try {
    text = await c.req.text();
  } catch {
    throw invalid("body", "could not be read", "the request body could not be read");
  }
  const jsonLines = /^application\/(x-ndjson|jsonl)/i.test(c.req.header("content-type") ?? "");
  // Measured before it is parsed: a pathological body is refused before it costs the heap (import_scan.ts).
  const scanned = jsonLines ? scanJsonLines(text) : scanJson(text);
  if (scanned) throw invalid("body", scanned.issue, scanned.description);
  const { values, firebase } = jsonLines ? splitLines(text) : splitJson(text);
  if (values.length > IMPORT_MAX_USERS) {
    throw invalid(
      "body",
      `at most ${IMPORT_MAX_USERS} users`,
      `an import takes at most ${IMPORT_MAX_USERS} users`,
    );
  }
  return { lines: values.map(([line, value]) => checkLine(line, value)), firebase };
}

type Split = { values: [number, unknown][]; firebase: FirebaseParams | null };

/** A JSON array of users, or `{"users": [...], "firebase": {...}}`: the array's 1-based positions are the lines. */
function splitJson(text: string): Split {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalid("body", "is not JSON", "the body is not JSON");
  }
  const numbered = (users: unknown[]) => users.map((u, i): [number, unknown] => [i + 1, u]);
  if (Array.isArray(body)) return { values: numbered(body), firebase: null };
  if (body === null || typeof body !== "object") {
    throw invalid("body", 'must be an array of users or {"users": [...], "firebase": {...}}');
  }
  const { users, firebase, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw invalid(unknown[0].slice(0, 100), "unknown field: only users and firebase");
  if (!Array.isArray(users)) throw invalid("users", "must be an array of users");
  return { values: numbered(users), firebase: firebaseOf(firebase) };
}

/**
 * JSON lines: one user a line (blank lines skipped; `\r\n` too), numbered as the file's lines are. A first line
 * that holds only `firebase` gives the parameters.
 */
function splitLines(text: string): Split {
  const values: [number, unknown][] = [];
  let firebase: FirebaseParams | null = null;
  // Line by line without splitting the text (a body of blank lines would be millions of strings).
  for (let i = 0, from = 0; from <= text.length; i++) {
    let end = text.indexOf("\n", from);
    if (end < 0) end = text.length;
    const line = end - from > 0 && /\S/.test(text.slice(from, end)) ? text.slice(from, end).trim() : "";
    from = end + 1;
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = NOT_JSON;
    }
    if (values.length === 0 && firebase === null && isFirebaseLine(value)) {
      firebase = firebaseOf((value as { firebase: unknown }).firebase);
      continue;
    }
    values.push([i + 1, value]);
    if (values.length > IMPORT_MAX_USERS) break; // refused whole: no need to read on
  }
  return { values, firebase };
}

const NOT_JSON = Symbol("not JSON");

const isFirebaseLine = (v: unknown) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && "firebase" in v;

/** The request's Firebase parameters, checked whole: a mistake in them is the request's, 400. */
function firebaseOf(value: unknown): FirebaseParams | null {
  if (value === undefined || value === null) return null;
  const parsed = FirebaseHashParameters.safeParse(value, { error: unknownFieldsError });
  if (parsed.success) return parsed.data;
  const details = zodDetails(parsed.error.issues).map((d) => ({ ...d, field: `firebase.${d.field}` }));
  throw new AppError("invalid_params", { description: "the firebase parameters are invalid", details });
}

const lineError = (details: LineError["details"]): LineError => ({
  code: "invalid_params",
  description: "the line is not a valid user: " + details!.map((d) => `${d.field} ${d.issue}`).join("; "),
  details,
});

/** One line checked against the user schema, or refused with its reason. */
function checkLine(line: number, value: unknown): ImportLine {
  if (value === NOT_JSON) return { line, refused: lineError([{ field: "line", issue: "is not JSON" }]) };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { line, refused: lineError([{ field: "line", issue: "must be a JSON object (one user)" }]) };
  }
  if ("password" in value) {
    return {
      line,
      refused: lineError([{
        field: "password",
        issue: "plain passwords are not imported: give password_hash, the hash the old system stored",
      }]),
    };
  }
  // PostgreSQL stores no NUL character in text or JSON; deep nesting could only exhaust whoever walks it.
  if (JSON.stringify(value).includes("\\u0000")) {
    return {
      line,
      refused: lineError([{ field: "line", issue: "must not contain NUL characters (\\u0000)" }]),
    };
  }
  if (deeperThan(value, MAX_DEPTH)) {
    return { line, refused: lineError([{ field: "line", issue: `at most ${MAX_DEPTH} levels of nesting` }]) };
  }
  const parsed = ImportUserLine.safeParse(value, { error: unknownFieldsError });
  if (!parsed.success) return { line, refused: lineError(zodDetails(parsed.error.issues)) };
  return { line, user: parsed.data };
}

/**
 * Importing users (`POST …/users/import`): each line is checked alone and either created or refused with its
 * reason; the others go on. Foreign password hashes are kept as they are (password_schemes.ts), so an import
 * hashes nothing. Lines are written a chunk at a time: one transaction per chunk holds its roles, inserts its
 * users in one statement that skips emails and external ids already taken, and records their `user.created`
 * events in one more, so that a user and its event are written together or not at all.
 */
import { isConflict, isUnavailable, type Sql, transaction, type Tx } from "../../db/connection.ts";
import {
  type EventSource,
  type ImportRow,
  insertImportedUsers,
  insertUserEvents,
  takenIdentifiers,
} from "../../db/provisioning/users_import.ts";
import type {
  FirebaseHashParameters,
  ImportLineResult,
  ImportUserLine,
  ImportUsersResult,
} from "../../openapi/users.ts";
import { auditEvents } from "../../telemetry/families.ts";
import { importHash } from "../accounts/password_schemes.ts";
import { requireGivable, requireRole } from "../accounts/users.ts";
import { normalizeEmail } from "../accounts/emails.ts";
import { sourceOf } from "../audit/audit.ts";
import { AppError, CONSTRAINT_ERRORS, type ErrorCode, ERRORS } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import type { Principal } from "../shared/principal.ts";

/** Why a line was refused. */
export type LineError = NonNullable<ImportLineResult["error"]>;

/** A line as the route read it: a user its schema accepted, or the reason it did not. */
export type ImportLine = { line: number; user: ImportUserLine } | { line: number; refused: LineError };

/** Users written per transaction: short enough not to hold the embedded database's one session for long. */
export const IMPORT_CHUNK = 1000;

const refusal = (code: ErrorCode, description?: string, details?: LineError["details"]): LineError => ({
  code,
  description: description ?? ERRORS[code].message,
  ...(details ? { details } : {}),
});

const fromAppError = (err: AppError): LineError => refusal(err.code, err.message, err.details);

type Prepared = { line: number; row: ImportRow };

/** The display name a line gives, or one made of its name parts, email or external id. */
function displayName(u: ImportUserLine, email: string | null, externalId: string | null): string {
  if (u.display_name) return u.display_name;
  const parts = [u.given_name, u.family_name].filter((p) => p).join(" ").trim();
  return (parts || email || externalId || "user").slice(0, 50).trim() || "user";
}

/** A line's user as stored, or why it cannot be. */
function prepare(u: ImportUserLine, firebase: FirebaseHashParameters | null): ImportRow | LineError {
  let passwordHash: string | null = null;
  if (u.password_hash) {
    const hashed = importHash(
      {
        password_hash: u.password_hash,
        password_hash_algorithm: u.password_hash_algorithm,
        password_salt: u.password_salt,
        password_salt_position: u.password_salt_position,
      },
      firebase,
    );
    if ("issue" in hashed) {
      return refusal("invalid_params", `the password hash is refused: ${hashed.issue}`, [hashed]);
    }
    passwordHash = hashed.stored;
  }
  const email = normalizeEmail(u.email) || null;
  const externalId = u.external_user_id || null;
  return {
    id: newId(),
    display_name: displayName(u, email, externalId),
    given_name: u.given_name || null,
    family_name: u.family_name || null,
    avatar_url: u.avatar_url || null,
    external_user_id: externalId,
    email,
    email_verified: u.email_verified ?? false,
    role_id: u.role_id || null,
    is_active: u.is_active ?? true,
    password_hash: passwordHash,
    properties: JSON.stringify(u.properties ?? {}),
  };
}

/**
 * Imports the lines into the project. Refused before anything is written: a line its schema refused, a hash that
 * is malformed or out of bounds or lacks its scheme's parameters, and an email or external id an earlier line of
 * the request has. Refused in its chunk's transaction: a role that does not exist or is an organization role, one
 * whose permissions the caller does not all hold, and an email or external id a user of the project already has.
 *
 * A chunk whose transaction fails (the database unavailable, say) after earlier chunks were committed does not
 * lose their results: the answer lists the created lines, and each line of the failed chunk and of the chunks
 * after it (none of them written) refused with `system_error`; `report` is told the error (the route logs it).
 * When the first chunk fails nothing was written, and the error is the request's.
 */
export async function importUsers(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: { lines: ImportLine[]; firebase: FirebaseHashParameters | null },
  report: (err: unknown) => void = () => {},
): Promise<ImportUsersResult> {
  const results = new Map<number, ImportLineResult>();
  const refuse = (line: number, error: LineError) => results.set(line, { line, status: "refused", error });
  const emails = new Map<string, number>();
  const externalIds = new Map<string, number>();
  const ready: Prepared[] = [];
  for (const item of input.lines) {
    if ("refused" in item) {
      refuse(item.line, item.refused);
      continue;
    }
    const row = prepare(item.user, input.firebase);
    if (!("id" in row)) {
      refuse(item.line, row);
      continue;
    }
    const sameEmail = row.email !== null ? emails.get(row.email) : undefined;
    const sameId = row.external_user_id !== null ? externalIds.get(row.external_user_id) : undefined;
    if (sameEmail !== undefined) {
      refuse(
        item.line,
        refusal("user_email_already_used", `line ${sameEmail} of this import has this email`),
      );
      continue;
    }
    if (sameId !== undefined) {
      refuse(
        item.line,
        refusal("user_external_id_already_used", `line ${sameId} of this import has this external id`),
      );
      continue;
    }
    if (row.email !== null) emails.set(row.email, item.line);
    if (row.external_user_id !== null) externalIds.set(row.external_user_id, item.line);
    ready.push({ line: item.line, row });
  }
  const source = eventSource(caller);
  for (let at = 0; at < ready.length; at += IMPORT_CHUNK) {
    const chunk = ready.slice(at, at + IMPORT_CHUNK);
    let outcomes: ImportLineResult[];
    try {
      outcomes = await transaction(sql, (tx) => writeChunk(tx, caller, projectId, chunk, source));
    } catch (err) {
      if (at === 0) throw err; // nothing written: the request's error
      report(err);
      const notWritten = refusal(
        "system_error",
        `not written: the import failed at its line ${chunk[0].line} (earlier lines were written); send ` +
          "this line again (lines already written are refused as user_email_already_used or " +
          "user_external_id_already_used, never duplicated)",
      );
      for (const p of ready.slice(at)) refuse(p.line, notWritten);
      break;
    }
    for (const outcome of outcomes) results.set(outcome.line, outcome);
  }
  const ordered = input.lines.map((l) => results.get(l.line)!);
  const created = ordered.filter((r) => r.status === "created").length;
  if (created > 0) auditEvents.child("user.created").value += created;
  return { results: ordered, created, refused: ordered.length - created };
}

function eventSource(caller: Principal): EventSource {
  const { actor, request } = sourceOf(caller);
  return {
    actor_type: actor.type,
    actor_id: actor.id,
    actor_token_jti: actor.token_jti,
    request_id: request?.id ?? null,
    request_ip: request?.ip ?? null,
    request_user_agent: request?.user_agent ?? null,
  };
}

/** One chunk in one transaction (which may run again whole after a conflict: it answers, and changes nothing). */
async function writeChunk(
  tx: Tx,
  caller: Principal,
  projectId: string,
  chunk: Prepared[],
  source: EventSource,
): Promise<ImportLineResult[]> {
  const outcomes: ImportLineResult[] = [];
  // Each role once: it must exist, be a project role, and be covered by the caller; it is held for the chunk.
  const roleIssues = new Map<string, LineError | null>();
  for (const { row } of chunk) {
    if (row.role_id === null || roleIssues.has(row.role_id)) continue;
    roleIssues.set(row.role_id, await roleIssue(tx, caller, projectId, row.role_id));
  }
  const writable: Prepared[] = [];
  for (const p of chunk) {
    const issue = p.row.role_id !== null ? roleIssues.get(p.row.role_id) : null;
    if (issue) outcomes.push({ line: p.line, status: "refused", error: issue });
    else writable.push(p);
  }
  const { inserted, failed } = await insertRows(tx, projectId, writable);
  const skipped = writable.filter((p) => !inserted.has(p.row.id) && !failed.has(p.row.id));
  const taken = skipped.length > 0
    ? await takenIdentifiers(
      tx,
      projectId,
      skipped.flatMap((p) => p.row.email ?? []),
      skipped.flatMap((p) => p.row.external_user_id ?? []),
    )
    : { emails: new Set<string>(), externalIds: new Set<string>() };
  const events: { id: string; user_id: string; details: string | null }[] = [];
  for (const p of writable) {
    if (inserted.has(p.row.id)) {
      outcomes.push({ line: p.line, status: "created", user_id: p.row.id });
      events.push({ id: newId(), user_id: p.row.id, details: JSON.stringify({ how: "import" }) });
    } else if (failed.has(p.row.id)) {
      outcomes.push({ line: p.line, status: "refused", error: failed.get(p.row.id)! });
    } else {
      const error = p.row.email !== null && taken.emails.has(p.row.email)
        ? refusal("user_email_already_used")
        : p.row.external_user_id !== null && taken.externalIds.has(p.row.external_user_id)
        ? refusal("user_external_id_already_used")
        : refusal("user_email_already_used", "a user with this email or external id was created meanwhile");
      outcomes.push({ line: p.line, status: "refused", error });
    }
  }
  await insertUserEvents(tx, projectId, "user.created", source, events);
  return outcomes;
}

/** Why a role cannot be given by this caller, or null when it can (checked in a savepoint of its own). */
async function roleIssue(
  tx: Tx,
  caller: Principal,
  projectId: string,
  roleId: string,
): Promise<LineError | null> {
  try {
    await transaction(tx, async (sp) => {
      await requireRole(sp, projectId, roleId);
      await requireGivable(sp, caller, projectId, roleId);
    });
    return null;
  } catch (err) {
    if (err instanceof AppError) return fromAppError(err);
    throw err;
  }
}

/**
 * The chunk's rows in one statement, in a savepoint. Should the database refuse that statement for a row it
 * cannot store (nothing the line's checks let through should), the rows are written one at a time, each in its
 * own savepoint, so that the row at fault is refused alone: one line's input never becomes another's answer.
 */
async function insertRows(
  tx: Tx,
  projectId: string,
  rows: Prepared[],
): Promise<{ inserted: Set<string>; failed: Map<string, LineError> }> {
  const failed = new Map<string, LineError>();
  try {
    const inserted = await transaction(
      tx,
      (sp) => insertImportedUsers(sp, projectId, rows.map((p) => p.row)),
    );
    return { inserted, failed };
  } catch (err) {
    if (!refusedRow(err)) throw err;
  }
  const inserted = new Set<string>();
  for (const { row } of rows) {
    try {
      for (const id of await transaction(tx, (sp) => insertImportedUsers(sp, projectId, [row]))) {
        inserted.add(id);
      }
    } catch (err) {
      if (!refusedRow(err)) throw err;
      const constraint = (err as { constraint_name?: string }).constraint_name;
      const code = (constraint && CONSTRAINT_ERRORS[constraint]) || "invalid_params";
      failed.set(
        row.id,
        refusal(code, code === "invalid_params" ? "the database cannot store this user" : undefined),
      );
    }
  }
  return { inserted, failed };
}

/** An error of the database about the data it was given (SQLSTATE 22 or 23), not about its own state. */
function refusedRow(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && /^2[23]/.test(code) && !isUnavailable(err) && !isConflict(err);
}

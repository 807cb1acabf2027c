/**
 * SCIM Users (RFC 7643 §4.1) over the project's users: `userName` is the user's email, `externalId` their
 * `external_user_id`, `active` their `is_active`. Every change goes through the admin API's own functions
 * (domain/accounts/users.ts), so least privilege, the audit trail and the end of a deactivated user's sessions
 * come with it.
 */
import { z } from "zod";
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  findScimUser,
  groupsOfUsers,
  listScimUsers,
  type ScimUserRow,
} from "../../db/provisioning/scim_users.ts";
import type { LinkSettings } from "../accounts/account_links.ts";
import { createUser, deleteUser, updateUser } from "../accounts/users.ts";
import type { Principal } from "../shared/principal.ts";
import { invalidValue, ScimError } from "./scim_errors.ts";
import {
  applySteps,
  canonicalBody,
  type Json,
  parsePatch,
  requireObject,
  requireSchema,
} from "./scim_patch.ts";
import { asks, type ListParams, listQuery, project } from "./scim_query.ts";
import { LIST_SCHEMA, USER_SCHEMA } from "./scim_schema.ts";
import { requireVersion, type Versioned } from "./scim_versions.ts";

/** The user as SCIM shows it; `groups` only when asked for (a `request` attribute). */
function userResource(base: string, row: ScimUserRow, groups?: { id: string; name: string }[]): Json {
  const formatted = [row.given_name, row.family_name].filter(Boolean).join(" ");
  const name: Json = {
    ...(formatted ? { formatted } : {}),
    ...(row.given_name ? { givenName: row.given_name } : {}),
    ...(row.family_name ? { familyName: row.family_name } : {}),
  };
  return {
    schemas: [USER_SCHEMA],
    id: row.id,
    ...(row.external_user_id !== null ? { externalId: row.external_user_id } : {}),
    ...(row.email !== null ? { userName: row.email } : {}),
    name,
    displayName: row.display_name,
    ...(row.email !== null ? { emails: [{ value: row.email, type: "work", primary: true }] } : {}),
    active: row.is_active,
    ...(groups
      ? { groups: groups.map((g) => ({ value: g.id, display: g.name, $ref: `${base}/Groups/${g.id}` })) }
      : {}),
    meta: {
      resourceType: "User",
      created: row.created_at,
      lastModified: row.updated_at,
      location: `${base}/Users/${row.id}`,
      version: etagOf(row),
    },
  };
}

const etagOf = (row: { version: string }) => `W/"${row.version}"`;

const versioned = (base: string, row: ScimUserRow, groups?: { id: string; name: string }[]): Versioned => ({
  resource: userResource(base, row, groups),
  etag: etagOf(row),
});

/** What a SCIM User body sets, read and checked by hand (names in any case; 400 `invalidValue`). */
type UserInput = {
  email: string | null;
  display_name: string;
  given_name: string | null;
  family_name: string | null;
  external_user_id: string | null;
  /** Undefined when the body has no `active` (or null). */
  is_active: boolean | undefined;
  password: string | null;
};

function text(name: string, v: unknown, max: number): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw invalidValue(name, "must be a string");
  const t = v.trim();
  if (t.length > max) throw invalidValue(name, `at most ${max} characters`);
  return t === "" ? null : t;
}

/** `active` as a boolean: Entra ID sends "True" and "False" as strings. */
function boolean(name: string, v: unknown): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "boolean") return v;
  if (typeof v === "string" && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === "true";
  throw invalidValue(name, "must be true or false");
}

/** An identifier matched exactly (`externalId`): never trimmed; "" (or blank) is none. */
function identifier(name: string, v: unknown, max: number): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw invalidValue(name, "must be a string");
  if (v.length > max) throw invalidValue(name, `at most ${max} characters`);
  return v.trim() === "" ? null : v;
}

function address(name: string, v: unknown): string | null {
  const t = text(name, v, 100);
  if (t !== null && !z.regexes.email.test(t)) throw invalidValue(name, "must be an email address");
  return t === null ? null : t.toLowerCase();
}

/** The address of `emails`: the primary one, else the work one, else the first. */
function emailsValue(v: unknown): string | null | undefined {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (!Array.isArray(v)) throw invalidValue("emails", "must be a list");
  const items = v.filter((e): e is Json => e !== null && typeof e === "object");
  const chosen = items.find((e) => e.primary === true || e.primary === "true" || e.primary === "True") ??
    items.find((e) => typeof e.type === "string" && e.type.toLowerCase() === "work") ?? items[0];
  return chosen === undefined ? null : address("emails.value", chosen.value);
}

/**
 * A body's user, read against the current one: the address is `userName`, or, when `userName` did not change,
 * an address of `emails` that did (Entra ID changes `emails[type eq "work"].value` alone).
 */
function readUser(doc: Json, current: ScimUserRow | null): UserInput {
  const userName = address("userName", doc.userName);
  const fromEmails = emailsValue(doc.emails);
  let email: string | null;
  if (current === null || userName !== current.email) email = userName;
  else if (fromEmails !== undefined && fromEmails !== null && fromEmails !== current.email) {
    email = fromEmails;
  } else email = userName;
  // userName is required (RFC 7643 §4.1.1): a body without one never deletes the user's address.
  if (email === null && (current === null || current.email !== null)) {
    throw invalidValue("userName", "is required");
  }
  const name = (doc.name ?? {}) as Json;
  if (typeof name !== "object" || Array.isArray(name)) throw invalidValue("name", "must be an object");
  // A value sent as it is stored is kept as stored (a name the admin API saved with spaces stays unchanged).
  const kept = (v: unknown, stored: string | null | undefined) => current !== null && v === stored;
  const given = kept(name.givenName, current?.given_name)
    ? current!.given_name
    : text("name.givenName", name.givenName, 100);
  const family = kept(name.familyName, current?.family_name)
    ? current!.family_name
    : text("name.familyName", name.familyName, 100);
  let display = kept(doc.displayName, current?.display_name)
    ? current!.display_name
    : text("displayName", doc.displayName, 50);
  if (display === null) {
    // displayName is optional in SCIM and required here: the name, else the address's local part.
    const derived = [given, family].filter(Boolean).join(" ") || (email ?? "").split("@")[0] ||
      (current?.display_name ?? "");
    display = derived.slice(0, 50).trim() || "user";
  }
  const password = doc.password;
  if (password !== undefined && password !== null) {
    if (typeof password !== "string" || password.length < 8 || password.length > 1024) {
      throw invalidValue("password", "8 to 1024 characters");
    }
  }
  return {
    email,
    display_name: display,
    given_name: given,
    family_name: family,
    external_user_id: identifier("externalId", doc.externalId, 100),
    is_active: boolean("active", doc.active),
    password: typeof password === "string" ? password : null,
  };
}

/** 400 `mutability` when a body gives `id` another value than the resource's. */
function refuseOtherId(doc: Json, id: string): void {
  if (doc.id !== undefined && doc.id !== id) throw new ScimError(400, "mutability", "id is read-only");
}

export async function listUsers(
  sql: Sql,
  projectId: string,
  base: string,
  params: ListParams,
): Promise<Json> {
  const q = listQuery("User", params);
  const page = await retryRead(() => listScimUsers(sql, projectId, q));
  const groups = asks("User", q, "groups")
    ? await retryRead(() => groupsOfUsers(sql, projectId, page.rows.map((r) => r.id)))
    : undefined;
  return {
    schemas: [LIST_SCHEMA],
    totalResults: page.total,
    startIndex: q.startIndex,
    itemsPerPage: page.rows.length,
    Resources: page.rows.map((row) =>
      project("User", userResource(base, row, groups ? groups.get(row.id) ?? [] : undefined), q)
    ),
  };
}

export async function getUser(
  sql: Sql,
  projectId: string,
  base: string,
  id: string,
  params: ListParams,
): Promise<Versioned> {
  const q = listQuery("User", {
    attributes: params.attributes,
    excludedAttributes: params.excludedAttributes,
  });
  const row = await retryRead(() => findScimUser(sql, projectId, id));
  if (!row) throw notFound(id);
  const groups = asks("User", q, "groups")
    ? (await retryRead(() => groupsOfUsers(sql, projectId, [id]))).get(id) ?? []
    : undefined;
  const { resource, etag } = versioned(base, row, groups);
  return { resource: project("User", resource, q), etag };
}

const notFound = (id: string) => new ScimError(404, undefined, `no user ${id} in this project`);

/** POST /Users: a user of the project, marked verified (the directory vouches for its address). */
export async function createScimUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  body: unknown,
): Promise<Versioned> {
  const doc = canonicalBody("User", requireObject(body));
  requireSchema(doc, USER_SCHEMA);
  const input = readUser(doc, null);
  return await transaction(sql, async (tx) => {
    const user = await createUser(tx, caller, projectId, {
      display_name: input.display_name,
      given_name: input.given_name,
      family_name: input.family_name,
      email: input.email,
      email_verified: true,
      external_user_id: input.external_user_id,
      is_active: input.is_active ?? true,
      password: input.password,
    });
    return versioned(base, (await findScimUser(tx, projectId, user.id))!);
  });
}

/**
 * The change a replaced representation makes, through updateUser (one transaction with the read, so that
 * `If-Match` compares the version it replaces). Nothing changed writes nothing.
 */
async function change(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  ifMatch: string | undefined,
  next: (current: ScimUserRow) => Json,
  mail?: LinkSettings,
): Promise<Versioned> {
  return await transaction(sql, async (tx) => {
    const current = await findScimUser(tx, projectId, id, { lock: true });
    if (!current) throw notFound(id);
    requireVersion(ifMatch, etagOf(current));
    const doc = next(current);
    refuseOtherId(doc, id);
    const read = readUser(doc, current);
    // A PUT without `active` keeps it (never reactivates a user a directory or an admin deactivated).
    const input = { ...read, is_active: read.is_active ?? current.is_active };
    const emailChanged = input.email !== current.email;
    const same = !emailChanged && input.password === null &&
      input.display_name === current.display_name && input.given_name === current.given_name &&
      input.family_name === current.family_name && input.external_user_id === current.external_user_id &&
      input.is_active === current.is_active;
    if (same) return versioned(base, current);
    await updateUser(tx, caller, projectId, id, {
      display_name: input.display_name,
      given_name: input.given_name,
      family_name: input.family_name,
      is_active: input.is_active,
      external_user_id: input.external_user_id,
      email: input.email,
      password: input.password,
      ...(emailChanged && input.email !== null ? { email_verified: true } : {}),
    }, mail);
    return versioned(base, (await findScimUser(tx, projectId, id))!);
  });
}

/**
 * PUT /Users/{id}: the body replaces every writable attribute (an omitted one is cleared), but `userName` is
 * required and an omitted `active` keeps its value.
 */
export async function replaceScimUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  body: unknown,
  ifMatch: string | undefined,
  mail?: LinkSettings,
): Promise<Versioned> {
  const doc = canonicalBody("User", requireObject(body));
  requireSchema(doc, USER_SCHEMA);
  return await change(sql, caller, projectId, base, id, ifMatch, () => doc, mail);
}

/** PATCH /Users/{id}: the operations applied to the current representation, then saved as a replace. */
export async function patchScimUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  body: unknown,
  ifMatch: string | undefined,
  mail?: LinkSettings,
): Promise<Versioned> {
  const steps = parsePatch("User", body); // read and sized whole before the user is locked
  return await change(sql, caller, projectId, base, id, ifMatch, (current) => {
    const { meta: _, ...resource } = userResource(base, current);
    const doc = applySteps("User", resource, steps);
    // `active` is not required, but removing it (or setting it to null) has no meaning: true or false.
    if (doc.active === undefined || doc.active === null) {
      throw invalidValue("active", "cannot be removed or null: send true or false");
    }
    return doc;
  }, mail);
}

/** DELETE /Users/{id}: deleteUser, after `If-Match`. */
export async function deleteScimUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
  ifMatch: string | undefined,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findScimUser(tx, projectId, id, { lock: true });
    if (!current) throw notFound(id);
    requireVersion(ifMatch, etagOf(current));
    await deleteUser(tx, caller, projectId, id);
  });
}

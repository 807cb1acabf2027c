/**
 * What the AuthZEN tests share: the certification scenario's fixture as a project, raw HTTP to the endpoints,
 * and a check of every answer against its route's response schema.
 */
import assert from "node:assert/strict";
import {
  ActionSearchResponse,
  AuthzenConfiguration,
  Decision,
  EntitySearchResponse,
  EvaluationsResponse,
} from "../openapi/authzen.ts";
import { http, newProject, type TestProject } from "./helpers.ts";

export type Fixture = TestProject & {
  ids: Record<string, string>;
  /** The `record` resource's id. */
  recordId: string;
  editor: { id: string };
  viewer: { id: string };
  alice: { id: string };
  bob: { id: string };
};

/**
 * The scenario's fixture (§ "Required Fixture"): alice edits records (read, write, delete), bob views them
 * (read), so that rules 1–4 hold: alice reads and writes record-1, bob reads it and may not write it.
 * `record-1` and `record-2` are registered objects of `record` (resource search lists them).
 */
export async function fixture(): Promise<Fixture> {
  const p = await newProject();
  const record = await p.api.resources.createResource(p.project.id, {
    name: "Record",
    code: "record",
    permissions: [
      { name: "Read", code: "read" },
      { name: "Write", code: "write" },
      { name: "Delete", code: "delete" },
    ],
  });
  const ids = Object.fromEntries(record.permissions.map((x) => [x.code, x.id]));
  const editor = await p.api.roles.createRole(p.project.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [ids.read, ids.write, ids.delete],
  });
  const viewer = await p.api.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [ids.read],
  });
  const alice = await p.api.users.createUser(p.project.id, {
    display_name: "Alice",
    external_user_id: "alice",
    role_id: editor.id,
  });
  const bob = await p.api.users.createUser(p.project.id, {
    display_name: "Bob",
    external_user_id: "bob",
    role_id: viewer.id,
  });
  await p.api.objects.createObjects(p.project.id, record.id, {
    objects: [{ id: "record-1", name: "Record 1" }, { id: "record-2", name: "Record 2" }],
  });
  return { ...p, ids, recordId: record.id, editor, viewer, alice, bob };
}

let shared: Promise<Fixture> | undefined;
export const scenario = () => shared ??= fixture();

export async function post(
  path: string,
  body: unknown,
  token: string | undefined,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await http(path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Each endpoint's answer as its route publishes it. */
const ANSWERS: Record<string, { safeParse(v: unknown): { success: boolean; error?: unknown } }> = {
  "/access/v1/evaluation": Decision,
  "/access/v1/evaluations": EvaluationsResponse,
  "/access/v1/search/subject": EntitySearchResponse,
  "/access/v1/search/resource": EntitySearchResponse,
  "/access/v1/search/action": ActionSearchResponse,
  "/.well-known/authzen-configuration": AuthzenConfiguration,
};

/** A 200 JSON answer, checked against its route's response schema. */
// deno-lint-ignore no-explicit-any
export async function ok(res: Response): Promise<any> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  const schema = ANSWERS[new URL(res.url).pathname];
  assert.ok(schema, res.url);
  const parsed = schema.safeParse(body);
  assert.ok(parsed.success, `${res.url}: ${text}: ${parsed.error}`);
  return body;
}

export const EVALUATION = "/access/v1/evaluation";
export const EVALUATIONS = "/access/v1/evaluations";
export const SUBJECTS = "/access/v1/search/subject";
export const RESOURCES = "/access/v1/search/resource";
export const ACTIONS = "/access/v1/search/action";

export const alice = { type: "user", id: "alice" };
export const bob = { type: "user", id: "bob" };
export const record1 = { type: "record", id: "record-1" };
export const record2 = { type: "record", id: "record-2" };
export const read = { name: "read" };
export const write = { name: "write" };

/** SCIM tests' helpers: a project with a SCIM client, raw SCIM requests, and exact error checks. */
import assert from "node:assert/strict";
import { clientWith, http, newProject, type TestProject } from "./helpers.ts";

export const USER = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const ERROR = "urn:ietf:params:scim:api:messages:2.0:Error";
export const LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse";

export type ScimProject = TestProject & { scimToken: string; scimClientId: string };

/** A fresh project and a client holding scim:read and scim:write (or `codes`). */
export async function scimProject(
  codes = ["scim:read", "scim:write"],
  body: Parameters<typeof newProject>[0] = {},
): Promise<ScimProject> {
  const p = await newProject(body);
  const client = await clientWith(p, codes);
  return { ...p, scimToken: client.token, scimClientId: client.id };
}

/** A SCIM request under the project's base URL, as a directory sends it (application/scim+json). */
export async function scim(
  p: ScimProject,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  token: string | null = p.scimToken,
): Promise<Response> {
  return await http(`/scim/v2/${p.project.id}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/scim+json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** The JSON of an answer of this status (and SCIM's media type). */
export async function expectJson(res: Response, status: number): Promise<Record<string, unknown>> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get("content-type") ?? "", /^application\/scim\+json/);
  return JSON.parse(text);
}

/** An RFC 7644 §3.12 error of exactly this status and scimType (none when undefined). */
export async function expectScimError(
  res: Response,
  status: number,
  scimType?: string,
): Promise<{ detail: string }> {
  const body = await expectJson(res, status);
  assert.deepEqual(body.schemas, [ERROR]);
  assert.equal(body.status, String(status));
  assert.equal(body.scimType, scimType, JSON.stringify(body));
  assert.equal(typeof body.detail, "string");
  return body as { detail: string };
}

/** A PatchOp body of these operations. */
export const patch = (...ops: unknown[]) => ({ schemas: [PATCH_OP], Operations: ops });

/** A unique address at a test domain. */
export const address = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}@example.com`;

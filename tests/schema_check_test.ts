/** The check of every answer against the document (tests/schema_check.ts) refuses what differs from it. */
import assert from "node:assert/strict";
import { http, newProject, test } from "./helpers.ts";
import { checkAnswer, checkAnswersOf, SchemaMismatch, strictSchema } from "./schema_check.ts";

const ROLE = {
  id: "r1",
  project_id: "p1",
  code: "orders",
  name: "Orders",
  description: null,
  scope: "project",
  permission_ids: [],
  conditions: [],
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
};
const URL_ = "http://127.0.0.1:9/api/v1/projects/p1/roles";

const json = (body: unknown, status = 200, type = "application/json") =>
  new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "content-type": type },
  });

async function refused(res: Response, pattern: RegExp, method = "GET", url = URL_) {
  await assert.rejects(checkAnswer(method, url, res), (err: unknown) => {
    assert.ok(err instanceof SchemaMismatch, String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

test("checkAnswer accepts an answer as the document describes it, and leaves its body to the caller", async () => {
  const res = json({ data: [ROLE], pagination: { page_num: 1, page_size: 10, total: 1 } });
  await checkAnswer("GET", URL_, res);
  assert.equal((await res.json()).data[0].code, "orders");
  await checkAnswer("GET", "http://127.0.0.1:9/not-documented", json({ anything: 1 }));
});

test("checkAnswer refuses a field the schema lacks, at any depth", async () => {
  const page = (role: object) => json({ data: [role], pagination: { page_num: 1, page_size: 10, total: 1 } });
  await refused(
    page({ ...ROLE, written_by_sql: 1 }),
    /listRoles\) answered 200: .*body\/data\/0 must NOT have unevaluated properties \("written_by_sql"\)/s,
  );
  await refused(
    json({ data: [], pagination: { page_num: 1, page_size: 10, total: 0, pages: 0 } }),
    /body\/pagination must NOT have unevaluated properties \("pages"\)/,
  );
  // allOf: a CreatedProject is a Project and its admin_client, and nothing else.
  const project = {
    id: "p1",
    name: "n",
    description: null,
    redirect_uris: [],
    post_logout_redirect_uris: [],
    is_active: true,
    is_system: false,
    require_verified_email: false,
    signup: "off",
    client_metadata_documents: "off",
    default_role_id: null,
    mfa: "optional",
    branding: { display_name: null, primary_color: null, terms_url: null, privacy_url: null, logo_url: null },
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    admin_client: { client_id: "c", client_secret: "s" },
  };
  const created = "http://127.0.0.1:9/api/v1/projects";
  await checkAnswer("POST", created, json(project, 201)).catch((err) => {
    // The example above may lag the Project schema: say which field, rather than fail obscurely.
    throw new Error(`the test's CreatedProject is out of date: ${err.message}`);
  });
  await refused(json({ ...project, extra: true }, 201), /createProject.*unevaluated/s, "POST", created);
  await refused(
    json({ ...project, admin_client: { ...project.admin_client, extra: 1 } }, 201),
    /\/admin_client must NOT have unevaluated properties/,
    "POST",
    created,
  );
});

test("checkAnswer refuses a missing required field, a wrong type or format, and a body that is not JSON", async () => {
  const page = (role: object) => json({ data: [role], pagination: { page_num: 1, page_size: 10, total: 1 } });
  const { code: _, ...noCode } = ROLE;
  await refused(page(noCode), /must have required property 'code'/);
  await refused(page({ ...ROLE, permission_ids: "a,b" }), /permission_ids must be array/);
  await refused(page({ ...ROLE, created_at: "yesterday" }), /created_at must match format "date-time"/);
  await refused(json("{not json"), /not application\/json/);
  await refused(
    json("<p>hi</p>", 200, "text/html"),
    /Content-Type text\/html where the operation documents JSON/,
  );
});

test("checkAnswer checks an NDJSON answer line by line as the caller reads it", async () => {
  const url = "http://127.0.0.1:9/api/v1/projects/p1/audit-events";
  const res = await checkAnswer("GET", url, json('{"not_an_event":1}\n', 200, "application/x-ndjson"));
  await assert.rejects(res.text(), (err: unknown) => {
    assert.ok(err instanceof SchemaMismatch, String(err));
    assert.match(err.message, /listAuditEvents.*must have required property 'id'/s);
    return true;
  });
  const empty = await checkAnswer("GET", url, json("", 200, "application/x-ndjson"));
  assert.equal(await empty.text(), "");
});

test("checkAnswer refuses an undocumented status, and an error code the status does not list", async () => {
  const error = (code: string, status: number) => json({ error: code, error_description: "x" }, status);
  await refused(error("role_not_found", 418), /418: a status the operation does not document/);
  await refused(error("no_such_code", 404), /body\/error must be equal to one of the allowed values/);
  await refused(error("role_not_found", 404), /error role_not_found is not one the operation documents/);
  await checkAnswer("GET", URL_, error("project_not_found", 404));
});

test("strictSchema closes each object once, where its value stands, not in the parts it is made of", () => {
  const s = strictSchema({
    allOf: [
      { $ref: "#/components/schemas/A" },
      { type: "object", properties: { b: { type: "object", properties: { c: {} } } } },
    ],
  });
  assert.deepEqual(s, {
    allOf: [
      { $ref: "components#/$defs/A__open" },
      {
        type: "object",
        properties: { b: { type: "object", properties: { c: {} }, unevaluatedProperties: false } },
      },
    ],
    unevaluatedProperties: false,
  });
  assert.deepEqual(strictSchema({ $ref: "#/components/schemas/A", description: "d" }), {
    $ref: "components#/$defs/A",
    description: "d",
  });
  assert.throws(() => strictSchema({ not: { type: "object", properties: {} } }), /`not`/);
  assert.deepEqual(strictSchema({ type: "object", additionalProperties: { type: "string" } }), {
    type: "object",
    additionalProperties: { type: "string" },
  });
});

test("fetch throws when a service under test answers what its schema does not allow", async () => {
  // A stand-in for the service that writes one field too many; its address is checked like a real service's.
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => json({ data: [{ ...ROLE, extra: 1 }], pagination: { page_num: 1, page_size: 10, total: 1 } }),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    checkAnswersOf(url);
    await assert.rejects(fetch(`${url}/api/v1/projects/p1/roles`), SchemaMismatch);
    // Outside the document's paths the answer is not checked.
    assert.equal((await fetch(`${url}/elsewhere`).then((r) => r.json())).data[0].extra, 1);
  } finally {
    await server.shutdown();
  }
});

test("a real answer of the service under test passes the check", async () => {
  const p = await newProject();
  const res = await http(`/api/v1/projects/${p.project.id}/resources`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(res.status, 200);
  assert.ok((await res.json()).data.length > 0);
});

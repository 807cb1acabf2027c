/**
 * The fixture of the Client ID Metadata Document tests (tests/client_metadata_support.ts): a Deno process
 * reaches the test's HTTPS document server with `node:https`, as the service does, when NODE_EXTRA_CA_CERTS and
 * DENO_CERT name the test CA, and is refused on the certificate without them. DENO_CERT alone is enough only while
 * NODE_EXTRA_CA_CERTS is unset: once set (some machines set it to the system's bundle), `node:https` trusts what
 * it names and ignores DENO_CERT, which is why the service gets both.
 */
import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import { documentServer, testCa } from "./client_metadata_support.ts";

// What outbound() does: node:https with a lookup of its own; prints the answer, or the error, as one JSON line.
const CLIENT = `
import https from "node:https";
const req = https.request(Deno.args[0], {
  lookup: (_host, o, cb) => o?.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4),
}, (res) => {
  let body = "";
  res.setEncoding("utf8");
  res.on("data", (chunk) => body += chunk);
  res.on("end", () => console.log(JSON.stringify({ status: res.statusCode, type: res.headers["content-type"], body })));
});
req.on("error", (err) => console.log(JSON.stringify({ error: \`\${err.code} \${err.message}\` })));
req.end();
`;

type Outcome = { status?: number; type?: string; body?: string; error?: string };

/** Runs CLIENT in a Deno process of its own with exactly these of the CA variables. */
async function fetchInChild(dir: string, url: string, extra: Record<string, string>): Promise<Outcome> {
  const script = `${dir}/client.js`;
  await Deno.writeTextFile(script, CLIENT);
  const env = Deno.env.toObject();
  delete env.DENO_CERT;
  delete env.NODE_EXTRA_CA_CERTS;
  const out = await new Deno.Command(Deno.execPath(), {
    // The permissions of `deno task start`, where the service runs; no configuration file of this repository.
    args: ["run", "--no-config", "--allow-net", "--allow-env", "--allow-read", "--allow-sys", script, url],
    cwd: dir,
    clearEnv: true,
    env: { ...env, ...extra },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.ok(out.success && text, `${text}\n${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(text);
}

/** A CA certificate that signed nothing here, as a PEM file. */
async function otherCa(dir: string): Promise<string> {
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      "other.key",
      "-out",
      "other.pem",
      "-days",
      "1",
      "-subj",
      "/CN=another CA",
      "-addext",
      "basicConstraints=critical,CA:true",
    ],
    cwd: dir,
    stdout: "null",
    stderr: "null",
  }).output();
  assert.ok(out.success);
  return `${dir}/other.pem`;
}

test("a node:https client trusts the document server through the CA variables, and only with them", async () => {
  const ca = await testCa();
  const server = await documentServer();
  if (!ca || !server) return; // no openssl here
  try {
    const doc = {
      client_id: server.url("/client.json"),
      client_name: "Fixture",
      redirect_uris: ["https://a/cb"],
    };
    server.route("/client.json", { body: doc, headers: { "cache-control": "max-age=60" } });

    const trusted = await fetchInChild(ca.dir, server.url("/client.json"), {
      DENO_CERT: ca.caFile,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    assert.equal(trusted.error, undefined);
    assert.equal(trusted.status, 200);
    assert.equal(trusted.type, "application/json");
    assert.deepEqual(JSON.parse(trusted.body!), doc);
    assert.equal(server.hits("/client.json"), 1);

    // No CA: the handshake fails on the certificate, and no request reaches the server.
    const untrusted = await fetchInChild(ca.dir, server.url("/client.json"), {});
    assert.match(untrusted.error ?? "", /UNABLE_TO_VERIFY_LEAF_SIGNATURE|certificate/i);
    // DENO_CERT alone reaches node:https too, but only while NODE_EXTRA_CA_CERTS is unset: set (to another
    // bundle, as a machine's environment may), it is what node:https trusts instead, and DENO_CERT is ignored.
    const denoCertOnly = await fetchInChild(ca.dir, server.url("/client.json"), { DENO_CERT: ca.caFile });
    assert.equal(denoCertOnly.status, 200, denoCertOnly.error);
    const shadowed = await fetchInChild(ca.dir, server.url("/client.json"), {
      DENO_CERT: ca.caFile,
      NODE_EXTRA_CA_CERTS: await otherCa(ca.dir),
    });
    assert.match(shadowed.error ?? "", /UNABLE_TO_VERIFY_LEAF_SIGNATURE|certificate/i);
    assert.equal(server.hits("/client.json"), 2);

    // A path nobody set: 404; and fetch, in this process, with the CA given to its own client.
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(ca.caFile)] });
    try {
      const res = await fetch(server.url("/missing"), { client });
      assert.equal(res.status, 404);
      await res.body?.cancel();
    } finally {
      client.close();
    }
    assert.equal(server.hits("/missing"), 1);
  } finally {
    await server.close();
  }
});

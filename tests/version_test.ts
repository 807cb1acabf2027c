/** The service and its SDK carry one version, published in the OpenAPI document and named in the changelog. */
import assert from "node:assert/strict";

const read = (path: string) => Deno.readTextFile(new URL(`../${path}`, import.meta.url));

Deno.test("deno.json, the SDK's package.json and lockfile, and openapi.json carry the same version", async () => {
  const service = JSON.parse(await read("deno.json")).version;
  assert.ok(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(service), `deno.json's version: ${service}`);
  const sdk = JSON.parse(await read("sdk/package.json"));
  const lock = JSON.parse(await read("sdk/package-lock.json"));
  const document = JSON.parse(await read("openapi/openapi.json"));
  assert.deepEqual(
    {
      sdk: sdk.version,
      lock: lock.version,
      lockRoot: lock.packages[""].version,
      openapi: document.info.version,
    },
    { sdk: service, lock: service, lockRoot: service, openapi: service },
  );
  assert.equal(sdk.license, "Apache-2.0");
});

Deno.test("CHANGELOG.md has a section for the current version", async () => {
  const service = JSON.parse(await read("deno.json")).version;
  const changelog = await read("CHANGELOG.md");
  assert.ok(changelog.includes(`\n## ${service}`), `CHANGELOG.md has no "## ${service}" section`);
  assert.ok(
    (await read("LICENSE")).includes("Apache License") &&
      (await read("LICENSE")).includes("Version 2.0, January 2004"),
  );
});

/**
 * Imported users and mailed links, through a real SMTP server (tests/smtp_catcher.ts): the first sign-in rehashes
 * an imported hash to argon2id, and a verification, reset or invitation link mailed before it keeps working (its
 * password stamp follows the rehash, db/accounts/passwords.ts).
 */
import assert from "node:assert/strict";
import bcrypt from "bcryptjs";
import { test } from "./helpers.ts";
import {
  api,
  hiddenFields,
  Jar,
  loginStatus,
  newEmail,
  projectAt,
  sharedMailService,
} from "./mail_support.ts";
import { linkIn } from "./smtp_catcher.ts";

const service = sharedMailService();
const PASSWORD = "correct horse battery";

test("a verification link mailed after an import still works once the first sign-in has rehashed the hash", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const imported = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/users/import`, [
    { email, password_hash: bcrypt.hashSync(PASSWORD, 4) },
  ]);
  assert.equal(imported.status, 200, await imported.clone().text());
  const userId = (await imported.json()).results[0].user_id;
  const mailed = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${userId}/verification`,
  );
  assert.equal(mailed.status, 202, await mailed.clone().text());
  await mailed.body?.cancel();
  const link = linkIn(await s.catcher.mailTo(email));
  // The first sign-in: the bcrypt hash becomes the service's argon2id.
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 303);
  const user = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${userId}`))
    .json();
  assert.equal(user.password_scheme, "argon2id");
  // The link mailed before it still confirms the address.
  const jar = new Jar(s.url);
  const page = await jar.get(link);
  const html = await page.text();
  assert.match(html, /Confirm your email address/);
  const done = await jar.post("/authorize/verify", hiddenFields(html));
  assert.equal(done.status, 200);
  assert.match(await done.text(), /Email address confirmed/);
  const after = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${userId}`))
    .json();
  assert.equal(after.email_verified, true);
});

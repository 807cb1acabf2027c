/** The sign-up form's rules, pure: the domain match and the fields' errors (domain/signup/signup.ts). */
import assert from "node:assert/strict";
import { domainAllowed, signupErrors } from "../domain/signup/signup.ts";

const form = (fields: Record<string, string> = {}) => ({
  email: "ann@example.com",
  name: "Ann",
  password: "correct horse battery",
  password_repeat: "correct horse battery",
  website: "",
  ...fields,
});

Deno.test("a domain-limited sign-up matches the address's domain part exactly, in any case", () => {
  const rule = { domains: ["example.com"] };
  assert.equal(domainAllowed(rule, "ann@example.com"), true);
  assert.equal(domainAllowed(rule, "ann@EXAMPLE.com"), true);
  assert.equal(domainAllowed(rule, "ann@mail.example.com"), false, "no subdomains");
  assert.equal(domainAllowed(rule, "ann@example.com.evil.test"), false);
  assert.equal(domainAllowed(rule, "example.com@evil.test"), false, "the part after the last @");
  assert.equal(domainAllowed("open", "ann@anything.test"), true);
});

Deno.test("the sign-up form's errors name their fields", () => {
  assert.deepEqual(signupErrors(form()), {});
  assert.deepEqual(Object.keys(signupErrors(form({ email: "no-at-sign" }))), ["email"]);
  assert.deepEqual(Object.keys(signupErrors(form({ email: `${"a".repeat(95)}@b.com` }))), ["email"]);
  assert.deepEqual(Object.keys(signupErrors(form({ name: " " }))), ["name"]);
  assert.deepEqual(Object.keys(signupErrors(form({ password: "short", password_repeat: "short" }))), [
    "password",
  ]);
  assert.deepEqual(Object.keys(signupErrors(form({ password_repeat: "other" }))), ["password_repeat"]);
  assert.deepEqual(
    signupErrors(form({ password: "Ann@Example.com", password_repeat: "Ann@Example.com" })).password,
    "Do not use your email address as your password.",
  );
});

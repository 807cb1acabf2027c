/**
 * Self-service sign-up (the project's `signup`: "off", "open", or {"domains": [...]}), from a login page: the
 * form's rules, the throttles, the honeypot, and the answer that never says whether an address was registered
 * before. What a new user gets: an address, a password, no role; a verification mail when the project requires
 * verified addresses (no code before it is followed, domain/accounts/signin_policy.ts). docs/log-in-users.md.
 */
import { z } from "zod";
import { type Sql, transaction } from "../../db/connection.ts";
import { findMailUser, findMailUserByEmail } from "../../db/events/mail.ts";
import { findSignupPolicy } from "../../db/projects/projects.ts";
import { insertSignupUser } from "../../db/signup/signup.ts";
import type { Signup } from "../../openapi/projects.ts";
import { issueLink, type LinkSettings } from "../accounts/account_links.ts";
import { normalizeEmail } from "../accounts/emails.ts";
import { hashPassword, passwordIssue } from "../accounts/passwords.ts";
import { record, userSource } from "../audit/audit.ts";
import { queueMail } from "../events/mail.ts";
import { type SecondStep, secondStepFor } from "../factors/second_step.ts";
import { newId } from "../shared/ids.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";

/** The name of the honeypot field: visually hidden, so humans leave it empty and form-filling robots do not. */
export const HONEYPOT = "website";

/** The fields of the sign-up form. */
export type SignupForm = {
  email: string;
  name: string;
  password: string;
  password_repeat: string;
  /** The honeypot. */
  website: string;
};

/** A field's problem, in words for the form, under the field it names. */
export type SignupErrors = Partial<Record<"email" | "name" | "password" | "password_repeat", string>>;

export type SignupOutcome =
  /** The form again, with its errors; nothing was created. */
  | { kind: "invalid"; errors: SignupErrors }
  /**
   * "Check your mail": a verification link went to a new user, or a note to the owner of a registered address,
   * or (the honeypot) nothing at all. The three look the same.
   */
  | { kind: "mailed"; email: string }
  /** A new user, signed in: the login goes on (a second step, or the code). */
  | { kind: "created"; userId: string; secondStep: SecondStep };

/** The project's sign-up rule, or null when sign-up is off (or the project inactive): the page is a 404. */
export async function signupRule(sql: Sql, projectId: string): Promise<Exclude<Signup, "off"> | null> {
  const policy = await findSignupPolicy(sql, projectId);
  if (!policy || !policy.is_active || policy.signup === "off") return null;
  return policy.signup;
}

/** The domain part of an address (after its last `@`), matched exactly against the allowed ones. */
export function domainAllowed(rule: Exclude<Signup, "off">, email: string): boolean {
  if (rule === "open") return true;
  const domain = email.slice(email.lastIndexOf("@") + 1).toLowerCase();
  return rule.domains.includes(domain);
}

/** The form's errors, field by field; empty when the form may be used. */
export function signupErrors(form: SignupForm): SignupErrors {
  const errors: SignupErrors = {};
  const email = normalizeEmail(form.email) ?? "";
  if (!email) errors.email = "Enter your email address.";
  else if (email.length > 100 || !z.regexes.email.test(email)) {
    errors.email = "Enter an email address such as name@example.com.";
  }
  const name = form.name.trim();
  if (!name) errors.name = "Enter your name.";
  else if (name.length > 50) errors.name = "Use at most 50 characters.";
  const issue = passwordIssue(form.password, email);
  if (issue) errors.password = issue;
  else if (form.password !== form.password_repeat) errors.password_repeat = "The two passwords differ.";
  return errors;
}

/**
 * A sign-up form posted from the login page `req`. Every post counts against its network address (429
 * `too_many_requests` beyond THROTTLE.signupAddress), every well-formed one against its address too
 * (THROTTLE.signupEmail). A filled honeypot and an address outside `signup.domains` are `signup.refused`
 * events; a registered address is mailed a note (`signup_existing`) and answered as a new one is.
 */
export async function signUp(
  sql: Sql,
  s: LinkSettings,
  p: {
    rule: Exclude<Signup, "off">;
    req: { id: string; project_id: string; client_id: string; acr: string | null };
    form: SignupForm;
    request: RequestInfo;
  },
): Promise<SignupOutcome> {
  const { rule, req, form, request } = p;
  await attempt(sql, `signup:address:${addressKey(request.ip)}`, THROTTLE.signupAddress);
  const email = normalizeEmail(form.email) ?? "";
  const refused = (details: Record<string, string>) =>
    record(sql, {
      projectId: req.project_id,
      type: "signup.refused",
      source: userSource(null, request),
      target: { type: "user", id: null },
      details: { client_id: req.client_id, ...details },
    });
  if (form.website !== "") {
    // A robot: the same answer as a success, so that it learns nothing; what it typed is not kept.
    await refused({ reason: "honeypot" });
    return { kind: "mailed", email: email.slice(0, 100) };
  }
  const errors = signupErrors(form);
  if (Object.keys(errors).length > 0) return { kind: "invalid", errors };
  if (!domainAllowed(rule, email)) {
    await refused({ reason: "domain_not_allowed", domain: email.slice(email.lastIndexOf("@") + 1) });
    return {
      kind: "invalid",
      errors: { email: "Accounts cannot be created with addresses of this domain." },
    };
  }
  await attempt(sql, `signup:email:${req.project_id}:${email}`, THROTTLE.signupEmail);
  // Hashed whether or not the address is new, before the transaction, so that both take as long.
  const passwordHash = await hashPassword(form.password);
  const created = await transaction(sql, async (tx) => {
    const inserted = await insertSignupUser(tx, {
      project_id: req.project_id,
      id: newId(),
      display_name: form.name.trim(),
      email,
      password_hash: passwordHash,
    });
    if (inserted === null) {
      await mailOwner(tx, s, req.project_id, email);
      return null;
    }
    const userId = inserted.id;
    const user = (await findMailUser(tx, req.project_id, userId))!;
    await record(tx, {
      projectId: req.project_id,
      type: "user.created",
      source: userSource(userId, request),
      target: { type: "user", id: userId },
      details: { how: "signup", client_id: req.client_id, email, role_id: inserted.role_id },
    });
    const verify = (await findSignupPolicy(tx, req.project_id))!.require_verified_email;
    if (verify) {
      const source = userSource(userId, request);
      await issueLink(tx, s, { ...user, email }, "email_verification", source, req.id);
    }
    return { userId, verify };
  });
  if (created === null || created.verify) return { kind: "mailed", email };
  // Signed in with the password just chosen, as a password login is (its event included).
  const secondStep = await secondStepFor(sql, req, created.userId);
  await record(sql, {
    projectId: req.project_id,
    type: "login.succeeded",
    source: userSource(created.userId, request),
    target: { type: "user", id: created.userId },
    details: {
      email,
      client_id: req.client_id,
      how: "signup",
      ...(secondStep !== "none" ? { second_factor: secondStep } : {}),
    },
  });
  return { kind: "created", userId: created.userId, secondStep };
}

/** The owner of a registered address is told someone tried it, with the way to a new password. */
async function mailOwner(tx: Sql, s: LinkSettings, projectId: string, email: string): Promise<void> {
  const owner = await findMailUserByEmail(tx, projectId, email);
  if (!owner || !owner.is_active) return;
  await queueMail(tx, s.vault, {
    projectId,
    kind: "signup_existing",
    to: email,
    userId: owner.id,
    fields: { project: owner.project_name, name: owner.display_name },
    link: `${s.publicUrl}/authorize/reset?${new URLSearchParams({ project_id: projectId })}`,
  });
}

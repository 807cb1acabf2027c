/**
 * What each mail says: a subject, a plain text body and an HTML body, from a few fields. Change a mail's wording
 * here (docs/email.md). No images, no remote assets, no tracking; every field is escaped in the HTML.
 */
import type { MailKind } from "../../db/events/mail.ts";

export type MailFields = {
  /** The project's name: the application the user knows. */
  project: string;
  /** The user's display name. */
  name: string;
  /** How long the link works, in words ("30 minutes"). */
  valid_for?: string;
  /** The new address (email_changed). */
  new_email?: string;
  /** "yes": the change waits for the new address to be confirmed (email_changed). */
  pending?: string;
  /** What changed, a sentence (security_notice). */
  change?: string;
  /** When, in UTC (security_notice). */
  when?: string;
  /** Which device and address, or "an administrator of …" (security_notice). */
  device?: string;
  /** The account page, where the user sees and undoes it (security_notice). */
  account_url?: string;
  /** The organization the address is invited to (organization_invitation). */
  organization?: string;
};

export type RenderedMail = { subject: string; text: string; html: string };

const escape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");

/** Seconds in words: "30 minutes", "7 days". */
export function duration(seconds: number): string {
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, "day");
  if (seconds % 3600 === 0) return unit(seconds / 3600, "hour");
  if (seconds >= 60) return unit(Math.round(seconds / 60), "minute");
  return unit(seconds, "second");
}

type Template = {
  subject: (f: MailFields) => string;
  /** Paragraphs before the link. */
  intro: (f: MailFields) => string[];
  /** The link's button text, when the mail has a link. */
  action?: string;
  /** Paragraphs after the link. */
  outro: (f: MailFields) => string[];
};

const TEMPLATES: Record<MailKind, Template> = {
  password_reset: {
    subject: (f) => `Reset your password for ${f.project}`,
    intro: (f) => [
      `Hello ${f.name},`,
      `someone (hopefully you) asked to reset the password of your ${f.project} account. Open this link to ` +
      `choose a new one. It works once, for ${f.valid_for}.`,
    ],
    action: "Choose a new password",
    outro: () => [
      "If you did not ask for this, ignore this mail: your password stays as it is.",
    ],
  },
  invitation: {
    subject: (f) => `You are invited to ${f.project}`,
    intro: (f) => [
      `Hello ${f.name},`,
      `an account was made for you in ${f.project}. Open this link to choose your password. It works once, ` +
      `for ${f.valid_for}.`,
    ],
    action: "Choose your password",
    outro: () => ["If you did not expect this, ignore this mail."],
  },
  organization_invitation: {
    subject: (f) => `You are invited to join ${f.organization} on ${f.project}`,
    intro: (f) => [
      "Hello,",
      `you are invited to join ${f.organization} on ${f.project}, as ${f.name}. Open this link to accept: ` +
      `you sign in with your account, or create one if you have none. It works once, for ${f.valid_for}.`,
    ],
    action: "Accept the invitation",
    outro: () => ["If you did not expect this, ignore this mail: nothing happens unless you accept."],
  },
  email_verification: {
    subject: (f) => `Confirm your email address for ${f.project}`,
    intro: (f) => [
      `Hello ${f.name},`,
      `open this link to confirm that this address is yours for your ${f.project} account. It works once, ` +
      `for ${f.valid_for}.`,
    ],
    action: "Confirm my address",
    outro: () => ["If you did not ask for this, ignore this mail."],
  },
  email_changed: {
    subject: (f) => `Your email address for ${f.project} is changing`,
    intro: (f) => [
      `Hello ${f.name},`,
      f.pending === "yes"
        ? `the email address of your ${f.project} account is being changed to ${f.new_email}. It changes once ` +
          "the new address is confirmed; until then this address stays."
        : `the email address of your ${f.project} account was changed to ${f.new_email}.`,
    ],
    outro: () => [
      "If you did not ask for this, reset your password and tell the people who run this application.",
    ],
  },
  security_notice: {
    subject: (f) => `A change to how you sign in to ${f.project}`,
    intro: (f) => [
      `Hello ${f.name},`,
      `${f.change}`,
      `When: ${f.when}. By: ${f.device}.`,
      `If it was you, there is nothing to do. You can see your sign-in methods on your account page: ` +
      `${f.account_url}`,
    ],
    outro: () => [
      "If it was not you, someone else can use your account: change your password (or reset it with " +
      '"Forgot your password?" on the sign-in page), sign out everywhere from your account page, remove ' +
      "what you do not recognise, and tell the people who run this application.",
    ],
  },
  signup_existing: {
    subject: (f) => `Someone tried to create an account for ${f.project} with your address`,
    intro: (f) => [
      `Hello ${f.name},`,
      `someone (hopefully you) tried to create a new ${f.project} account with this address. You already have ` +
      "one: sign in with it, or, if you forgot your password, choose a new one here.",
    ],
    action: "Reset my password",
    outro: () => ["If it was not you, ignore this mail: no account was created and nothing changed."],
  },
};

/** The mail of this kind, with its link (when it has one). */
export function renderMail(kind: MailKind, fields: MailFields, link: string | null): RenderedMail {
  const t = TEMPLATES[kind];
  const subject = t.subject(fields);
  const intro = t.intro(fields);
  const outro = t.outro(fields);
  const footer = `This mail was sent by ${fields.project}. You cannot reply to it.`;
  const text = [
    ...intro,
    ...(t.action && link ? [`${t.action}:\n${link}`] : []),
    ...outro,
    "--",
    footer,
  ].join("\n\n") + "\n";
  const p = (s: string) => `<p style="margin:0 0 16px">${escape(s)}</p>`;
  const button = t.action && link
    ? `<p style="margin:24px 0"><a href="${escape(link)}" style="display:inline-block;padding:12px 20px;` +
      `background:#1a56db;color:#ffffff;text-decoration:none;border-radius:6px;font-weight:600">` +
      `${escape(t.action)}</a></p><p style="margin:0 0 16px;font-size:13px;color:#555555">Or copy this ` +
      `address into your browser:<br>${escape(link)}</p>`
    : "";
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(subject)}</title>` +
    `</head><body style="margin:0;padding:24px;font-family:system-ui,sans-serif;color:#111111;line-height:1.5">` +
    `<div style="max-width:560px;margin:0 auto">${intro.map(p).join("")}${button}${outro.map(p).join("")}` +
    `<hr style="border:0;border-top:1px solid #dddddd;margin:24px 0"><p style="font-size:13px;color:#555555">` +
    `${escape(footer)}</p></div></body></html>`;
  return { subject, text, html };
}

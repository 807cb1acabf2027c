/**
 * Security notices: every change of a user's sign-in methods (an authenticator, recovery codes, a passkey, the
 * password) mails the user what changed, when, from which device and address, and what to do if it was not them,
 * in the transaction of the change (the outbox of domain/events/mail.ts). A user without an address gets none.
 */
import type { Sql } from "../../db/connection.ts";
import { findMailUser } from "../../db/events/mail.ts";
import type { Source } from "../audit/audit.ts";
import { queueMail } from "../events/mail.ts";

/** What changed, in the words of the mail's first line. */
export const NOTICES = {
  totp_added: "An authenticator app was added to your account.",
  totp_removed: "The authenticator app of your account was removed, with its recovery codes.",
  recovery_codes: "New recovery codes were made for your account; the old ones no longer work.",
  passkey_added: "A passkey was added to your account.",
  passkey_removed: "A passkey was removed from your account.",
  password_changed: "The password of your account was changed.",
  password_set: "A password was set for your account.",
} as const;

export type NoticeKind = keyof typeof NOTICES;

/** The device of a request in words: its browser's user agent and its address. */
function deviceOf(source: Source): string {
  const agent = source.request?.user_agent?.replace(/[\r\n]+/g, " ").slice(0, 200);
  const ip = source.request?.ip;
  return `${agent || "an unknown device"}${ip ? `, from the address ${ip}` : ""}`;
}

/**
 * Queues the notice of a change to the user, in the caller's transaction. `by_admin`: an administrator made it
 * (the mail says so); `name` adds the factor's name ("My phone").
 */
export async function mailNotice(
  tx: Sql,
  n: {
    projectId: string;
    userId: string;
    kind: NoticeKind;
    source: Source;
    publicUrl: string;
    byAdmin?: boolean;
    name?: string;
  },
): Promise<void> {
  const user = await findMailUser(tx, n.projectId, n.userId);
  if (!user?.email) return;
  const account = new URL("/account", n.publicUrl);
  account.searchParams.set("project", n.projectId);
  await queueMail(tx, null, {
    projectId: n.projectId,
    kind: "security_notice",
    to: user.email,
    userId: user.id,
    fields: {
      project: user.project_name,
      name: user.display_name,
      change: NOTICES[n.kind] + (n.name ? ` Its name: ${n.name.slice(0, 50)}.` : ""),
      when: new Date().toUTCString().replace(/GMT$/, "UTC"),
      device: n.byAdmin ? `an administrator of ${user.project_name}` : deviceOf(n.source),
      account_url: account.toString(),
    },
    link: null,
  });
}

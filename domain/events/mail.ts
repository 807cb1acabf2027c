/**
 * Mail delivery from the outbox: a mail is written in the transaction that asks for it (`queueMail`), and every
 * instance's worker claims due mails (SKIP LOCKED, so each is sent by one worker) and sends them through the SMTP
 * server of SMTP_URL, or without one writes them to the log. A failed attempt is retried with backoff and jitter
 * for about 4 hours, then the mail is given up with a `mail.failed` audit event. At least once: a crash after the
 * server took the mail but before that was recorded sends it again (with the same Message-ID).
 */
import { type Sql, transaction } from "../../db/connection.ts";
import {
  type ClaimedMail,
  claimMails,
  insertMail,
  type MailKind,
  markMailFailed,
  markMailSent,
} from "../../db/events/mail.ts";
import type { Logger } from "../../log.ts";
import { record, SYSTEM } from "../audit/audit.ts";
import { newId } from "../shared/ids.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { type MailFields, renderMail } from "./mail_templates.ts";
import { sendMail, type SmtpTarget } from "./smtp.ts";
import { mailDeliveries } from "../../telemetry/families.ts";
import { startClientSpan } from "../../telemetry/trace.ts";

export type MailSettings = {
  /** Undefined: mails are written to the log. */
  smtp?: SmtpTarget;
  from: string;
  vault: KeyVault | null;
  publicUrl: string;
  retryBaseSeconds: number;
  log: Logger;
};

/** Seconds before each retry (5 s … 2 h, about 4 hours in all), each stretched or shrunk by up to a fifth. */
export const MAIL_RETRY_DELAYS = [5, 30, 120, 300, 900, 1800, 3600, 7200];
/** A claimed mail not settled within this is claimed again (its worker died). */
const LEASE_SECONDS = 120;

export function mailRetryIn(attempts: number, base = MAIL_RETRY_DELAYS[0]): number | null {
  const delay = MAIL_RETRY_DELAYS[attempts - 1];
  if (delay === undefined) return null;
  return Math.round(delay * (base / MAIL_RETRY_DELAYS[0]) * (0.8 + Math.random() * 0.4) * 1000) / 1000;
}

/** Writes a mail to the outbox, in the caller's transaction; its link is sealed when KEY_ENCRYPTION_KEY is set. */
export async function queueMail(
  sql: Sql,
  vault: KeyVault | null,
  m: {
    projectId: string;
    kind: MailKind;
    to: string;
    userId: string | null;
    fields: MailFields;
    link: string | null;
  },
): Promise<void> {
  const id = newId();
  await insertMail(sql, {
    project_id: m.projectId,
    id,
    kind: m.kind,
    to_address: m.to,
    user_id: m.userId,
    params: m.fields as Record<string, string>,
    link: m.link !== null && !vault ? m.link : null,
    link_sealed: m.link !== null && vault ? vault.sealText(id, m.link) : null,
  });
}

function linkOf(s: MailSettings, m: ClaimedMail): string | null {
  if (m.link_sealed) {
    if (!s.vault) throw new Error("the mail's link is sealed and KEY_ENCRYPTION_KEY is not set");
    return s.vault.openText(m.id, m.link_sealed);
  }
  return m.link;
}

async function attempt(s: MailSettings, m: ClaimedMail): Promise<void> {
  const mail = renderMail(m.kind, m.params as MailFields, linkOf(s, m));
  if (!s.smtp) {
    s.log.warn("mail written to the log, not sent: SMTP_URL is not set (see docs/email.md)", {
      mail_id: m.id,
      to: m.to_address,
      subject: mail.subject,
      text: mail.text,
    });
    return;
  }
  const host = new URL(s.publicUrl).hostname.replace(/^\[|\]$/g, "") || "localhost";
  // With tracing on, each send is a client span of its own (a new trace: no request waits for it).
  const span = startClientSpan("SMTP send", {
    "server.address": s.smtp.host,
    "server.port": s.smtp.port,
    "acs.mail.kind": m.kind,
    "acs.mail.attempt": m.attempts,
  });
  try {
    await sendMail(s.smtp, {
      from: s.from,
      to: m.to_address,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      messageId: `${m.id}@${host}`,
    }, /^[A-Za-z0-9.-]+$/.test(host) ? host : "localhost");
    span?.end();
  } catch (err) {
    span?.end(err instanceof Error ? err.message : String(err));
    throw err;
  }
}

async function deliver(sql: Sql, s: MailSettings, m: ClaimedMail): Promise<void> {
  try {
    await attempt(s, m);
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    const retry = mailRetryIn(m.attempts, s.retryBaseSeconds);
    await transaction(sql, async (tx) => {
      if (!(await markMailFailed(tx, m, error, retry)) || retry !== null) return;
      await record(tx, {
        projectId: m.project_id,
        type: "mail.failed",
        source: SYSTEM,
        target: { type: "user", id: m.user_id },
        details: {
          mail_id: m.id,
          kind: m.kind,
          to: m.to_address,
          attempts: m.attempts,
          error: error.slice(0, 300),
        },
      });
    });
    mailDeliveries.child(retry === null ? "failed" : "retry").value++;
    if (retry === null) s.log.error("mail given up", { mail_id: m.id, attempts: m.attempts, error });
    else {s.log.warn("mail not sent; retrying", {
        mail_id: m.id,
        attempts: m.attempts,
        retry_in: retry,
        error,
      });}
    return;
  }
  await markMailSent(sql, m);
  mailDeliveries.child("delivered").value++;
}

/** Claims and sends what is due, up to `limit` at once; returns how many were claimed. */
export async function deliverMailDue(sql: Sql, s: MailSettings, limit = 10): Promise<number> {
  const claimed = await claimMails(sql, limit, LEASE_SECONDS);
  await Promise.all(claimed.map((m) => deliver(sql, s, m)));
  return claimed.length;
}

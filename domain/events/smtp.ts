/**
 * A small SMTP client (RFC 5321) that needs only network access: EHLO, STARTTLS when the server offers it
 * (RFC 3207), AUTH PLAIN or LOGIN (RFC 4954), one message per connection. `smtps://` is TLS from the first
 * byte (RFC 8314). TLS certificates are always checked against the host name. Credentials are never sent over
 * a connection without TLS, except to a loopback host (a local catcher).
 */
import { Buffer } from "node:buffer";

export type SmtpTarget = {
  /** TLS from the first byte (`smtps://`), or plain with STARTTLS when offered (`smtp://`). */
  implicitTls: boolean;
  host: string;
  port: number;
  user?: string;
  password?: string;
  /** The URL without its password, for logs and messages. */
  display: string;
};

/** Parses SMTP_URL; throws an Error saying what is wrong (the start stops with it). */
export function parseSmtpUrl(value: string): SmtpTarget {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error("is not a URL (smtp://user:password@host:port or smtps://…)");
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") {
    throw new Error("must start with smtp:// or smtps://");
  }
  if (!url.hostname) throw new Error("has no host");
  if ((url.pathname && url.pathname !== "/") || url.search || url.hash) {
    throw new Error("must be smtp://user:password@host:port with nothing after the port");
  }
  const implicitTls = url.protocol === "smtps:";
  const port = url.port ? Number(url.port) : implicitTls ? 465 : 587;
  const user = url.username ? decodeURIComponent(url.username) : undefined;
  const password = url.password ? decodeURIComponent(url.password) : undefined;
  if (password !== undefined && user === undefined) throw new Error("has a password without a user name");
  const display = `${url.protocol}//${user ? `${encodeURIComponent(user)}@` : ""}${url.host || url.hostname}`;
  return { implicitTls, host: url.hostname.replace(/^\[|\]$/g, ""), port, user, password, display };
}

export type MailMessage = {
  /** The envelope sender and the From header: an address, or `Name <address>`. */
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Stable across retries, so that a receiver can drop a duplicate. */
  messageId: string;
};

/** An SMTP exchange that failed: `code` is the server's reply code when it answered one. */
export class SmtpError extends Error {
  constructor(message: string, readonly code: number | null = null) {
    super(message);
  }
}

const TIMEOUT_MS = 30_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The address inside `Name <address>`, or the value itself. */
export function addressOf(mailbox: string): string {
  const m = /<([^<>]+)>\s*$/.exec(mailbox);
  return (m ? m[1] : mailbox).trim();
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host);

/** A header value: CR and LF removed, RFC 2047 encoded words when it is not plain ASCII. */
function headerText(value: string): string {
  const clean = value.replace(/[\r\n]+/g, " ");
  if (/^[\x20-\x7e]*$/.test(clean)) return clean;
  return `=?UTF-8?B?${Buffer.from(clean, "utf8").toString("base64")}?=`;
}

/** A From header: the display name encoded when needed, the address as is. */
function mailboxHeader(mailbox: string): string {
  const m = /^(.*?)\s*<([^<>]+)>\s*$/.exec(mailbox);
  if (!m || !m[1]) return addressOf(mailbox);
  const name = m[1].replace(/^"|"$/g, "");
  return `${/^[\x20-\x7e]*$/.test(name) ? `"${name.replace(/["\\]/g, "")}"` : headerText(name)} <${m[2]}>`;
}

const base64Lines = (text: string) =>
  (Buffer.from(text, "utf8").toString("base64").match(/.{1,76}/g) ?? []).join("\r\n");

/** The message as MIME: multipart/alternative with the plain text first, both parts base64 (7-bit safe). */
export function mimeOf(msg: MailMessage, date = new Date()): string {
  const boundary = `=_${crypto.randomUUID().replaceAll("-", "")}`;
  return [
    `From: ${mailboxHeader(msg.from)}`,
    `To: ${addressOf(msg.to)}`,
    `Subject: ${headerText(msg.subject)}`,
    `Date: ${date.toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${msg.messageId}>`,
    "MIME-Version: 1.0",
    "Auto-Submitted: auto-generated",
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    "",
    `--${boundary}`,
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: base64",
    "",
    base64Lines(msg.text),
    `--${boundary}`,
    "Content-Type: text/html; charset=utf-8",
    "Content-Transfer-Encoding: base64",
    "",
    base64Lines(msg.html),
    `--${boundary}--`,
    "",
  ].join("\r\n");
}

/** RFC 5321 §4.5.2: a line starting with a dot gets another. */
export function dotStuff(data: string): string {
  return data.replace(/\r?\n/g, "\r\n").replace(/^\./gm, "..");
}

/** Reads replies line by line from a connection (which STARTTLS may replace). */
class Replies {
  #buffer = "";
  constructor(private conn: Deno.Conn) {}

  async reply(): Promise<{ code: number; lines: string[] }> {
    const lines: string[] = [];
    while (true) {
      const line = await this.#line();
      // "250-…" continues, "250 …" (or a bare "250") ends the reply.
      const m = /^(\d{3})(?:([ -])(.*))?$/.exec(line);
      if (!m) throw new SmtpError(`malformed reply: ${line.slice(0, 100)}`);
      lines.push(m[3] ?? "");
      if (m[2] !== "-") return { code: Number(m[1]), lines };
      if (lines.length > 100) throw new SmtpError("reply too long");
    }
  }

  async #line(): Promise<string> {
    while (!this.#buffer.includes("\r\n")) {
      if (this.#buffer.length > 8192) throw new SmtpError("reply line too long");
      const chunk = new Uint8Array(4096);
      const n = await this.conn.read(chunk);
      if (n === null) throw new SmtpError("the server closed the connection");
      this.#buffer += decoder.decode(chunk.subarray(0, n));
    }
    const at = this.#buffer.indexOf("\r\n");
    const line = this.#buffer.slice(0, at);
    this.#buffer = this.#buffer.slice(at + 2);
    return line;
  }
}

async function writeAll(conn: Deno.Conn, text: string): Promise<void> {
  const bytes = encoder.encode(text);
  let done = 0;
  while (done < bytes.length) done += await conn.write(bytes.subarray(done));
}

/** Sends one message; throws SmtpError (or a network error) when it was not accepted. */
export async function sendMail(target: SmtpTarget, msg: MailMessage, heloName: string): Promise<void> {
  let conn: Deno.Conn = target.implicitTls
    ? await Deno.connectTls({ hostname: target.host, port: target.port })
    : await Deno.connect({ hostname: target.host, port: target.port });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      conn.close();
    } catch { /* closed */ }
  }, TIMEOUT_MS);
  try {
    let replies = new Replies(conn);
    let tls = target.implicitTls;
    const expect = async (what: string, ...codes: number[]) => {
      const r = await replies.reply();
      if (!codes.includes(r.code)) {
        throw new SmtpError(
          `${what}: the server answered ${r.code} ${r.lines.join(" ").slice(0, 300)}`,
          r.code,
        );
      }
      return r;
    };
    const command = async (line: string, what: string, ...codes: number[]) => {
      await writeAll(conn, `${line}\r\n`);
      return await expect(what, ...codes);
    };
    await expect("greeting", 220);
    let ehlo = await command(`EHLO ${heloName}`, "EHLO", 250);
    const offers = (name: string) => ehlo.lines.some((l) => l.toUpperCase().split(" ")[0] === name);
    if (!tls && offers("STARTTLS")) {
      await command("STARTTLS", "STARTTLS", 220);
      conn = await Deno.startTls(conn as Deno.TcpConn, { hostname: target.host });
      replies = new Replies(conn);
      tls = true;
      ehlo = await command(`EHLO ${heloName}`, "EHLO after STARTTLS", 250);
    }
    if (target.user !== undefined) {
      if (!tls && !isLoopback(target.host)) {
        throw new SmtpError("the server does not offer STARTTLS: the credentials are not sent without TLS");
      }
      const mechanisms = ehlo.lines.filter((l) => /^AUTH[ =]/i.test(l)).flatMap((l) =>
        l.slice(5).toUpperCase().split(/\s+/)
      );
      const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
      if (mechanisms.includes("PLAIN") || !mechanisms.includes("LOGIN")) {
        await command(`AUTH PLAIN ${b64(`\0${target.user}\0${target.password ?? ""}`)}`, "AUTH PLAIN", 235);
      } else {
        await command("AUTH LOGIN", "AUTH LOGIN", 334);
        await command(b64(target.user), "AUTH LOGIN user name", 334);
        await command(b64(target.password ?? ""), "AUTH LOGIN password", 235);
      }
    }
    await command(`MAIL FROM:<${addressOf(msg.from)}>`, "MAIL FROM", 250);
    await command(`RCPT TO:<${addressOf(msg.to)}>`, "RCPT TO", 250, 251);
    await command("DATA", "DATA", 354);
    await writeAll(conn, `${dotStuff(mimeOf(msg))}.\r\n`);
    await expect("the message", 250);
    // The message was accepted (250): a QUIT that fails changes nothing, the connection is closed below.
    await writeAll(conn, "QUIT\r\n").catch(() => {});
  } catch (err) {
    if (timedOut) throw new SmtpError(`no answer within ${TIMEOUT_MS / 1000} s`);
    throw err;
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

/**
 * A real SMTP server for the tests, over Deno.listen: EHLO (with AUTH PLAIN LOGIN), AUTH, MAIL, RCPT, DATA, RSET,
 * NOOP, QUIT. It keeps every message it accepts, decoded (headers, the text and HTML parts). `refuse` makes it
 * answer every RCPT with a permanent error; each connection is counted, so tests see the retries.
 */
import { Buffer } from "node:buffer";

export type CaughtMail = {
  from: string;
  to: string[];
  auth: string | null;
  raw: string;
  headers: Record<string, string>;
  subject: string;
  text: string;
  html: string;
};

export class SmtpCatcher {
  readonly mails: CaughtMail[] = [];
  /** Connections opened, accepted or not. */
  connections = 0;
  refuse = false;
  #listener: Deno.Listener;
  #conns = new Set<Deno.Conn>();
  #waiters: (() => void)[] = [];

  /** With `tls`, TLS from the first byte (smtps://) with this certificate. */
  constructor(port = 0, tls?: { cert: string; key: string }) {
    this.#listener = tls
      ? Deno.listenTls({ hostname: "127.0.0.1", port, cert: tls.cert, key: tls.key })
      : Deno.listen({ hostname: "127.0.0.1", port });
    this.#accept();
  }

  get port(): number {
    return (this.#listener.addr as Deno.NetAddr).port;
  }

  get url(): string {
    return `smtp://mailer:secret@127.0.0.1:${this.port}`;
  }

  async #accept() {
    try {
      for await (const conn of this.#listener) {
        this.connections++;
        this.#conns.add(conn);
        this.#serve(conn).catch(() => {}).finally(() => {
          this.#conns.delete(conn);
          try {
            conn.close();
          } catch { /* closed */ }
        });
      }
    } catch { /* closed */ }
  }

  async #serve(conn: Deno.Conn) {
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const say = (line: string) => conn.write(enc.encode(`${line}\r\n`));
    let buffer = "";
    const readLine = async (): Promise<string | null> => {
      while (!buffer.includes("\r\n")) {
        const chunk = new Uint8Array(8192);
        const n = await conn.read(chunk);
        if (n === null) return null;
        buffer += dec.decode(chunk.subarray(0, n));
      }
      const at = buffer.indexOf("\r\n");
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      return line;
    };
    await say("220 catcher ESMTP");
    let from = "";
    let to: string[] = [];
    let auth: string | null = null;
    while (true) {
      const line = await readLine();
      if (line === null) return;
      const verb = line.split(" ")[0].toUpperCase();
      if (verb === "EHLO" || verb === "HELO") {
        await say("250-catcher");
        await say("250-AUTH PLAIN LOGIN");
        await say("250 8BITMIME");
      } else if (verb === "AUTH") {
        const [, mech, initial] = line.split(" ");
        if (mech.toUpperCase() === "PLAIN") {
          auth = Buffer.from(initial ?? "", "base64").toString("utf8").split("\0").slice(1).join(":");
        } else {
          await say("334 VXNlcm5hbWU6");
          const user = Buffer.from((await readLine()) ?? "", "base64").toString("utf8");
          await say("334 UGFzc3dvcmQ6");
          const pass = Buffer.from((await readLine()) ?? "", "base64").toString("utf8");
          auth = `${user}:${pass}`;
        }
        await say("235 2.7.0 Authentication successful");
      } else if (verb === "MAIL") {
        from = /<([^>]*)>/.exec(line)?.[1] ?? "";
        to = [];
        await say("250 OK");
      } else if (verb === "RCPT") {
        if (this.refuse) {
          await say("550 5.1.1 No such mailbox here (the test refuses)");
          continue;
        }
        to.push(/<([^>]*)>/.exec(line)?.[1] ?? "");
        await say("250 OK");
      } else if (verb === "DATA") {
        await say("354 End data with <CR><LF>.<CR><LF>");
        const lines: string[] = [];
        while (true) {
          const l = await readLine();
          if (l === null) return;
          if (l === ".") break;
          lines.push(l.startsWith(".") ? l.slice(1) : l);
        }
        this.mails.push(parseMail(from, to, auth, lines.join("\r\n")));
        for (const w of this.#waiters.splice(0)) w();
        await say("250 OK queued");
      } else if (verb === "QUIT") {
        await say("221 Bye");
        return;
      } else if (verb === "RSET" || verb === "NOOP") {
        await say("250 OK");
      } else {
        await say("502 Command not implemented");
      }
    }
  }

  /** The first mail (from now or before) that matches, waiting up to `ms` for it. */
  async waitFor(match: (m: CaughtMail) => boolean, ms = 15_000): Promise<CaughtMail> {
    const deadline = Date.now() + ms;
    while (true) {
      const found = this.mails.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching mail within ${ms} ms (${this.mails.length} caught)`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 500));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /**
   * The mail to this address that the flow under test sent: a security notice (mailed with any change of the
   * user's sign-in methods, in a race with it) is not it; the notices have tests of their own.
   */
  mailTo(address: string, ms?: number): Promise<CaughtMail> {
    return this.waitFor((m) => m.to.includes(address) && !isNotice(m), ms);
  }

  close() {
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const c of this.#conns) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  }
}

function parseHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r\n[ \t]+/g, " ").split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0) headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}

function decodeWords(value: string): string {
  return value.replace(
    /=\?UTF-8\?B\?([^?]*)\?=/gi,
    (_, b64) => Buffer.from(b64, "base64").toString("utf8"),
  );
}

export function parseMail(from: string, to: string[], auth: string | null, raw: string): CaughtMail {
  const split = raw.indexOf("\r\n\r\n");
  const headers = parseHeaders(raw.slice(0, split));
  const body = raw.slice(split + 4);
  const boundary = /boundary="([^"]+)"/.exec(headers["content-type"] ?? "")?.[1];
  let text = "";
  let html = "";
  if (boundary) {
    for (const part of body.split(`--${boundary}`)) {
      const at = part.indexOf("\r\n\r\n");
      if (at < 0) continue;
      const h = parseHeaders(part.slice(0, at).replace(/^\r\n/, ""));
      const content = part.slice(at + 4);
      const decoded = /base64/i.test(h["content-transfer-encoding"] ?? "")
        ? Buffer.from(content.replace(/\s+/g, ""), "base64").toString("utf8")
        : content;
      if ((h["content-type"] ?? "").startsWith("text/plain")) text = decoded;
      if ((h["content-type"] ?? "").startsWith("text/html")) html = decoded;
    }
  }
  return { from, to, auth, raw, headers, subject: decodeWords(headers.subject ?? ""), text, html };
}

/** The one-time link in a mail's text. */
/** A security notice (domain/accounts/notices.ts): no link, sent beside the flows' own mails. */
export function isNotice(mail: Pick<CaughtMail, "subject">): boolean {
  return /^A change to how you sign in/.test(mail.subject);
}

export function linkIn(mail: CaughtMail): string {
  const m = /https?:\/\/\S+\?token=[A-Za-z0-9_-]{43}/.exec(mail.text);
  if (!m) throw new Error(`no link in the mail:\n${mail.text}`);
  return m[0];
}

/**
 * Mail delivery: SMTP_URL and MIME, a real SMTP server that refuses (retried, then `mail.failed`), one that is down
 * across a restart (still delivered), smtps:// certificate checks, the log without SMTP_URL, and mail under
 * `deno serve` with only --allow-net --allow-env --allow-read.
 */
import { mailDeliveries } from "../telemetry/families.ts";
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { dotStuff, mimeOf, parseSmtpUrl } from "../domain/events/smtp.ts";
import { ADMIN_SECRET, DATABASE_URL, eventually, freePort, isolatedDatabase, test } from "./helpers.ts";
import { eventsOf, Jar, mailService, newEmail, projectAt, userAt } from "./mail_support.ts";
import { spawn } from "./processes.ts";
import { linkIn, parseMail, SmtpCatcher } from "./smtp_catcher.ts";

test("SMTP_URL: a malformed value stops the start naming it; the parts are read", () => {
  for (const bad of ["http://mail.example.com", "smtp://", "not a url", "smtp://h:25/path"]) {
    assert.throws(() => loadConfig({ SMTP_URL: bad }), /SMTP_URL/);
  }
  assert.throws(() => loadConfig({ MAIL_FROM: "nobody" }), /MAIL_FROM/);
  const t = parseSmtpUrl("smtps://user%40x:p%3Ass@mail.example.com");
  assert.deepEqual(
    [t.implicitTls, t.host, t.port, t.user, t.password],
    [true, "mail.example.com", 465, "user@x", "p:ss"],
  );
  assert.equal(parseSmtpUrl("smtp://mail.example.com").port, 587);
  assert.equal(t.display.includes("p:ss"), false, "the password is not displayed");
});

test("MIME: multipart/alternative, encoded subject, dot-stuffing", () => {
  const raw = mimeOf({
    from: "Ünïcode <a@example.com>",
    to: "b@example.com",
    subject: "Réinitialiser\r\nBcc: x@evil",
    text: ".hidden line\nsecond",
    html: "<p>hé</p>",
    messageId: "1@example.com",
  });
  assert.doesNotMatch(raw, /\r\nBcc:/, "no header injection");
  const stuffed = dotStuff(raw);
  const mail = parseMail("a@example.com", ["b@example.com"], null, stuffed.replace(/^\.\./gm, "."));
  assert.equal(mail.text, ".hidden line\r\nsecond".replace("\r\n", "\n"));
  assert.equal(mail.html, "<p>hé</p>");
  assert.match(mail.subject, /^Réinitialiser/);
  assert.match(dotStuff("a\r\n.b\r\n"), /\r\n\.\.b/);
});

test("an SMTP server that refuses: retried, then mail.failed; the request was answered", async () => {
  const catcher = new SmtpCatcher();
  catcher.refuse = true;
  const s = await mailService({ MAIL_RETRY_BASE_SECONDS: "0.001" }, { catcher });
  // The service runs in this process: its metrics are this registry's (docs/observability.md).
  const before = { retry: mailDeliveries.child("retry").value, failed: mailDeliveries.child("failed").value };
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    const user = await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 40_000;
    let failed: Record<string, unknown>[] = [];
    while (Date.now() < deadline) {
      failed = await eventsOf(p, "mail.failed");
      if (failed.length > 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(failed.length, 1, "mail.failed after the last try");
    const details = failed[0].details as Record<string, unknown>;
    assert.equal(details.attempts, 9);
    assert.equal(details.to, email);
    assert.match(String(details.error), /550/);
    assert.deepEqual(failed[0].target, { type: "user", id: user.id });
    assert.ok(catcher.connections >= 9, `every try reached the server: ${catcher.connections}`);
    assert.equal(catcher.mails.length, 0);
    assert.ok(
      mailDeliveries.child("retry").value - before.retry >= 8,
      "acs_mail_deliveries_total{outcome=retry}",
    );
    assert.ok(
      mailDeliveries.child("failed").value - before.failed >= 1,
      "acs_mail_deliveries_total{outcome=failed}",
    );
  } finally {
    await s.close();
  }
});

test("a restart between the request and the delivery still delivers (SMTP down, then up)", async () => {
  const port = freePort();
  const down = new SmtpCatcher(port);
  down.close(); // nothing listens on the port
  const first = await mailService({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_RETRY_BASE_SECONDS: "0.5" }, {
    catcher: down,
  });
  const p = await projectAt(first.url);
  const email = newEmail();
  const retries = mailDeliveries.child("retry").value;
  await userAt(p, { email, send_invitation: true });
  await eventually("a failed try", () => mailDeliveries.child("retry").value > retries);
  await first.stop();
  const up = new SmtpCatcher(port);
  const second = await mailService({ SMTP_URL: `smtp://127.0.0.1:${port}` }, {
    catcher: up,
    database: first.env,
  });
  const delivered = mailDeliveries.child("delivered").value;
  try {
    const mail = await up.mailTo(email, 30_000);
    assert.match(mail.subject, /You are invited/);
    // Counted once the outbox marks it sent, just after the server took it.
    await eventually(
      "acs_mail_deliveries_total{outcome=delivered}",
      () => mailDeliveries.child("delivered").value > delivered,
      { within: 5_000 },
    );
    assert.ok(
      mailDeliveries.child("delivered").value > delivered,
      "acs_mail_deliveries_total{outcome=delivered}",
    );
    const jar = new Jar(second.url);
    // The link names the first service's address (its PUBLIC_URL); the same database answers at the second.
    const link = new URL(linkIn(mail));
    const res = await jar.get(`${second.url}${link.pathname}${link.search}`);
    assert.equal(res.status, 200, "the link works after the restart");
    await res.body?.cancel();
  } finally {
    await second.stop();
    up.close();
    await first.drop();
  }
});

test("without SMTP_URL mails are written to the log with a clear line", async () => {
  let log = "";
  const s = await mailService({ SMTP_URL: "", LOG_LEVEL: "warn" }, { write: (lines) => (log += lines) });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 10_000;
    while (!log.includes(email) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const line = log.split("\n").find((l) => l.includes(email))!;
    assert.match(line, /SMTP_URL is not set/);
    assert.match(line, /authorize\/password\?token=/);
  } finally {
    await s.close();
  }
});

/** A self-signed certificate for 127.0.0.1 made by openssl now, or null without openssl. */
async function selfSigned(): Promise<{ cert: string; key: string } | null> {
  const dir = await Deno.makeTempDir({ prefix: "acs-smtp-tls-" });
  try {
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
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    if (!out.success) return null;
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } catch {
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

test("smtps:// checks the server's certificate: a self-signed one is refused, and the mail retried", async () => {
  const tls = await selfSigned();
  if (!tls) return; // no openssl here
  const catcher = new SmtpCatcher(0, tls);
  const s = await mailService({ SMTP_URL: `smtps://mailer:secret@127.0.0.1:${catcher.port}` }, { catcher });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 15_000;
    let row: { status: string; last_error: string | null; attempts: number } | undefined;
    while (Date.now() < deadline) {
      [row] = await s.svc.db.sql<{ status: string; last_error: string | null; attempts: number }[]>`
        select status, last_error, attempts from mail_outbox where to_address = ${email}`;
      if (row?.last_error) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(row?.status, "pending", "retried later");
    assert.match(row!.last_error!, /certificate|UnknownIssuer/i);
    assert.equal(catcher.mails.length, 0, "nothing was sent over the unchecked connection");
  } finally {
    await s.close();
  }
});

test("under deno serve with only --allow-net --allow-env --allow-read, mail is sent", async () => {
  if (!DATABASE_URL) return; // deno serve needs a PostgreSQL server (no disk for the embedded one)
  const iso = await isolatedDatabase();
  const catcher = new SmtpCatcher();
  const proc = await spawn({ ...iso.env, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET, SMTP_URL: catcher.url }, {
    mode: "serve",
  });
  try {
    const p = await projectAt(proc.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    assert.match((await catcher.mailTo(email)).subject, /You are invited/);
  } finally {
    await proc.stop();
    catcher.close();
    await iso.drop();
  }
  assert.doesNotMatch(proc.output(), /NotCapable|PermissionDenied/);
  assert.match(proc.output(), /Mail: sent through smtp:\/\/mailer@127\.0\.0\.1/);
});

test("smtp:// upgrades with STARTTLS when offered, and checks the certificate then too", async () => {
  const tls = await selfSigned();
  if (!tls) return; // no openssl here
  const { createServer } = await import("node:net");
  const { TLSSocket } = await import("node:tls");
  const seen: string[] = [];
  // The server's side of the refused handshake: its socket errs or closes, an event awaited below (the client
  // may record its error before this side has seen the connection end).
  let handshakeFailed!: () => void;
  const failed = new Promise<void>((r) => handshakeFailed = r);
  const server = createServer((socket) => {
    socket.write("220 starttls-catcher ESMTP\r\n");
    let buffer = "";
    const onData = (chunk: Uint8Array) => {
      buffer += new TextDecoder().decode(chunk);
      while (buffer.includes("\r\n")) {
        const line = buffer.slice(0, buffer.indexOf("\r\n"));
        buffer = buffer.slice(buffer.indexOf("\r\n") + 2);
        seen.push(line);
        if (/^EHLO/i.test(line)) socket.write("250-starttls-catcher\r\n250-STARTTLS\r\n250 AUTH PLAIN\r\n");
        else if (/^STARTTLS/i.test(line)) {
          socket.off("data", onData);
          socket.write("220 Ready to start TLS\r\n", () => {
            const secure = new TLSSocket(socket, { isServer: true, cert: tls.cert, key: tls.key });
            secure.on("error", () => handshakeFailed());
            secure.on("close", () => handshakeFailed());
          });
          return;
        } else socket.write("502 no\r\n");
      }
    };
    socket.on("data", onData);
    socket.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  const unused = new SmtpCatcher();
  const s = await mailService({ SMTP_URL: `smtp://mailer:secret@127.0.0.1:${port}` }, { catcher: unused });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 15_000;
    let row: { last_error: string | null } | undefined;
    while (Date.now() < deadline) {
      [row] = await s.svc.db.sql<{ last_error: string | null }[]>`
        select last_error from mail_outbox where to_address = ${email}`;
      if (row?.last_error) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(seen.includes("STARTTLS"), `the client asked for STARTTLS: ${seen.join(" | ")}`);
    assert.equal(seen.some((l) => /^AUTH/i.test(l)), false, "no credentials before TLS");
    assert.match(row!.last_error!, /certificate|UnknownIssuer/i);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      failed,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("the server never saw the handshake fail")), 15_000);
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await s.close();
    server.close();
  }
});

/**
 * A service of its own for the mail tests: a fresh database, SMTP_URL pointing at a real SMTP server of the test
 * (tests/smtp_catcher.ts), and raw-HTTP helpers bound to its address.
 */
import assert from "node:assert/strict";
import {
  atModuleEnd,
  basic,
  challengeOf,
  isolatedDatabase,
  mutableLog,
  newVerifier,
  REDIRECT_URI,
  startWith,
  systemTokenAt,
} from "./helpers.ts";
import { SmtpCatcher } from "./smtp_catcher.ts";
import type { Service } from "../service.ts";

export type MailService = {
  url: string;
  svc: Service;
  catcher: SmtpCatcher;
  env: Record<string, string>;
  /** Stops the service (the database stays). */
  stop(): Promise<void>;
  /** Stops everything and drops the database. */
  close(): Promise<void>;
};

/** A service with its own database and SMTP server (or `env` overriding SMTP_URL and the rest). */
export async function mailService(
  env: Record<string, string> = {},
  opts: { catcher?: SmtpCatcher; write?: (lines: string) => void; database?: Record<string, string> } = {},
): Promise<MailService & { drop(): Promise<void>; dropSync(): void }> {
  const catcher = opts.catcher ?? new SmtpCatcher();
  const iso = opts.database
    ? { env: opts.database, drop: () => Promise.resolve(), dropSync: () => {} }
    : await isolatedDatabase();
  const full = { ...iso.env, SMTP_URL: catcher.url, MAIL_FROM: "Tests <no-reply@example.test>", ...env };
  const svc = await startWith(full, { write: opts.write });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await svc.close();
  };
  return {
    url: svc.url,
    svc,
    catcher,
    env: iso.env,
    stop,
    drop: iso.drop,
    dropSync: iso.dropSync,
    close: async () => {
      await stop();
      catcher.close();
      await iso.drop();
    },
  };
}

/** JSON to the admin API of the service at `url`. */
export async function api(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  return await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export type MailProject = { url: string; projectId: string; name: string; clientId: string; token: string };

/** A project (with the tests' redirect URI) and its admin client's token, at `url`. */
export async function projectAt(url: string): Promise<MailProject> {
  const system = await systemTokenAt(url);
  const name = `mail ${crypto.randomUUID().slice(0, 8)}`;
  const res = await api(url, system, "POST", "/api/v1/projects", { name, redirect_uris: [REDIRECT_URI] });
  assert.equal(res.status, 201, await res.clone().text());
  const project = await res.json();
  const { client_id, client_secret } = project.admin_client;
  const tokenRes = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: basic(client_id, client_secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  assert.equal(tokenRes.status, 200);
  return {
    url,
    projectId: project.id,
    name,
    clientId: client_id,
    token: (await tokenRes.json()).access_token,
  };
}

/** Creates a user; returns the record. */
export async function userAt(
  p: MailProject,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const res = await api(p.url, p.token, "POST", `/api/v1/projects/${p.projectId}/users`, {
    display_name: "Mail User",
    ...body,
  });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json();
}

export const newEmail = () => `u-${crypto.randomUUID().slice(0, 8)}@example.com`;

/** One browser's cookies against one service. */
export class Jar {
  readonly jar = new Map<string, string>();
  constructor(readonly base: string) {}

  #header(): Record<string, string> {
    return this.jar.size ? { cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }

  #take(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      this.jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return res;
  }

  async get(pathOrUrl: string): Promise<Response> {
    const url = pathOrUrl.startsWith("http") ? pathOrUrl : `${this.base}${pathOrUrl}`;
    return this.#take(await fetch(url, { redirect: "manual", headers: this.#header() }));
  }

  async post(pathOrUrl: string, form: Record<string, string>): Promise<Response> {
    const url = pathOrUrl.startsWith("http") ? pathOrUrl : `${this.base}${pathOrUrl}`;
    return this.#take(
      await fetch(url, {
        method: "POST",
        redirect: "manual",
        headers: { ...this.#header(), "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      }),
    );
  }
}

/** The hidden fields of a page's form. */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      m[2].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
        .replace(/&amp;/g, "&"),
    ]),
  );
}

/** Opens the login page of an OpenID request in `jar`; returns its HTML and the PKCE verifier. */
export async function openLogin(
  jar: Jar,
  clientId: string,
  extra: Record<string, string> = {},
): Promise<{ html: string; verifier: string }> {
  const verifier = newVerifier();
  const res = await jar.get(
    `/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      scope: "openid email",
      state: "st-1",
      ...extra,
    })}`,
  );
  assert.equal(res.status, 200);
  return { html: await res.text(), verifier };
}

/** Logs in on a fresh login page; the status of the form's answer (303 on success). */
export async function loginStatus(
  url: string,
  clientId: string,
  email: string,
  password: string,
): Promise<number> {
  const jar = new Jar(url);
  const { html } = await openLogin(jar, clientId);
  const res = await jar.post("/authorize", { ...hiddenFields(html), email, password });
  await res.body?.cancel();
  return res.status;
}

/** The audit events of a type in the project. */
export async function eventsOf(p: MailProject, type: string): Promise<Record<string, unknown>[]> {
  const res = await api(p.url, p.token, "GET", `/api/v1/projects/${p.projectId}/audit-events?type=${type}`);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).data;
}

/**
 * A test file's shared mail service (its own database and SMTP catcher), started on first use, stopped and its
 * database dropped when the file ends.
 */
export function sharedMailService(): () => Promise<MailService> {
  let shared: Promise<MailService> | undefined;
  return () =>
    shared ??= (async () => {
      const log = mutableLog();
      const s = await mailService({}, { write: log.write });
      atModuleEnd(() => {
        log.mute();
        void s.stop().catch(() => {});
        s.catcher.close();
        s.dropSync();
      });
      return s;
    })();
}

/**
 * What the example runners share: the service's address and the operators' secret from the environment, a
 * check that fails the run, a free port, and a browser made of plain HTTP (a cookie jar and a login form
 * filled in), so that a run needs no Chromium.
 */

/** SERVICE_URL (the service's PUBLIC_URL, default http://localhost:8000) and BOOTSTRAP_ADMIN_SECRET. */
export function serviceFromEnv(): { serviceUrl: string; adminSecret: string } {
  const serviceUrl = (Deno.env.get("SERVICE_URL") ?? "http://localhost:8000").replace(/\/+$/, "");
  const adminSecret = Deno.env.get("BOOTSTRAP_ADMIN_SECRET") ?? "";
  if (!adminSecret) {
    console.error(
      "Set BOOTSTRAP_ADMIN_SECRET to the secret of the system project's admin client (system-admin): " +
        "the one the service printed on its first start, or the BOOTSTRAP_ADMIN_SECRET it was started with.",
    );
    Deno.exit(2);
  }
  return { serviceUrl, adminSecret };
}

/** Fails the run (an exception, so the runner exits non-zero) unless `ok`; prints what was checked. */
export function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`  ok  ${what}`);
}

/** A port nobody listens on now, on 127.0.0.1. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** A short random suffix, so that every run makes names of its own. */
export function suffix(): string {
  return crypto.randomUUID().slice(0, 8);
}

/**
 * One browser: its cookies (kept per host name, as a browser does: the example app and the service both
 * run on 127.0.0.1, on two ports) and requests that never follow a redirect by themselves.
 */
export class Browser {
  readonly jar = new Map<string, string>();

  async get(url: string | URL): Promise<Response> {
    return this.take(await fetch(url, { redirect: "manual", headers: this.cookies() }));
  }

  async post(url: string | URL, form: Record<string, string>): Promise<Response> {
    return this.take(
      await fetch(url, {
        method: "POST",
        redirect: "manual",
        headers: { ...this.cookies(), "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      }),
    );
  }

  /**
   * GET `url` and follow redirects, as a browser does, until an answer that is not a redirect. Answers it
   * with the URL it came from and the URLs passed on the way.
   */
  async visit(url: string | URL): Promise<{ res: Response; url: URL; hops: URL[] }> {
    let at = new URL(url);
    const hops: URL[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await this.get(at);
      const location = res.headers.get("location");
      if (res.status < 300 || res.status > 399 || !location) return { res, url: at, hops };
      await res.body?.cancel();
      hops.push(at);
      at = new URL(location, at);
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** Fills the first form of `html` (at `pageUrl`) with these fields and submits it; answers the answer. */
  async submitOnly(pageUrl: URL, html: string, fields: Record<string, string>): Promise<Response> {
    const form = /<form[^>]*\baction="([^"]*)"/.exec(html);
    if (!form) throw new Error(`no form at ${pageUrl}`);
    const inputs = html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g);
    const hidden = Object.fromEntries([...inputs].map((m) => [m[1], unescape(m[2])]));
    return await this.post(new URL(unescape(form[1]), pageUrl), { ...hidden, ...fields });
  }

  /** Fills the first form of `html` (at `pageUrl`) with these fields, submits it, follows its redirects. */
  async submit(
    pageUrl: URL,
    html: string,
    fields: Record<string, string>,
  ): Promise<{ res: Response; url: URL; hops: URL[] }> {
    const res = await this.submitOnly(pageUrl, html, fields);
    const location = res.headers.get("location");
    if (res.status < 300 || res.status > 399 || !location) return { res, url: pageUrl, hops: [] };
    await res.body?.cancel();
    const next = await this.visit(new URL(location, pageUrl));
    return { ...next, hops: [pageUrl, ...next.hops] };
  }

  private cookies(): Record<string, string> {
    return this.jar.size ? { cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }

  private take(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const name = pair.slice(0, pair.indexOf("=")).trim();
      const value = pair.slice(pair.indexOf("=") + 1).trim();
      const gone = value === "" || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (gone) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }
}

/** Undoes the HTML escaping of an attribute value. */
function unescape(v: string): string {
  return v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

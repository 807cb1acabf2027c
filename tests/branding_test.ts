/**
 * Branding: the project's display name, colour and links through the API, its logo uploaded, refused and served
 * from this origin, and the pages its users see wearing them under the same strict CSP.
 */
import assert from "node:assert/strict";
import {
  Api,
  clientWith,
  expectError,
  http,
  loginProject,
  newProject,
  openLoginPage,
  REDIRECT_URI,
  test,
  type TestProject,
} from "./helpers.ts";
import { Browser, signIn } from "./oidc_support.ts";
import { hasChromium, launch } from "./console_support.ts";
import { codeStep, passwordStep } from "./mfa_support.ts";

const b64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/** A 1×1 PNG and a 1×1 lossless WebP, whole. */
export const PNG = b64(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
);
export const WEBP = b64("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==");
export const SVG = '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48" viewBox="0 0 64 48">' +
  '<defs><linearGradient id="g"><stop offset="0" stop-color="#0f766e"/></linearGradient></defs>' +
  '<style>rect { stroke: black; }</style><path id="p" d="M0 0h8v8z"/><use href="#p" x="8"/>' +
  '<rect width="64" height="48" fill="url(#g)"/></svg>';

const BRANDING = {
  display_name: "Acme Shop",
  primary_color: "#0F766E",
  terms_url: "https://acme.example.com/terms",
  privacy_url: "https://acme.example.com/privacy",
};

export function putLogo(p: TestProject, body: BodyInit, type: string, token = p.token): Promise<Response> {
  return http(`/api/v1/projects/${p.project.id}/branding/logo`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": type },
    body,
  });
}

async function logoOf(p: TestProject, type: string, body: BodyInit): Promise<string> {
  const res = await putLogo(p, body, type);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text).logo_url;
}

test("branding is set on create, read back, kept when omitted, replaced by an object and audited", async () => {
  const p = await newProject({ branding: BRANDING });
  assert.deepEqual(p.project.branding, { ...BRANDING, primary_color: "#0f766e", logo_url: null });
  const read = await p.api.projects.getProject(p.project.id);
  assert.deepEqual(read.branding, p.project.branding);
  const kept = await p.api.projects.updateProject(p.project.id, { name: p.project.name, description: "x" });
  assert.deepEqual(kept.branding, p.project.branding);
  const replaced = await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    branding: { display_name: "Acme", primary_color: "#abc" },
  });
  assert.deepEqual(replaced.branding, {
    display_name: "Acme",
    primary_color: "#abc",
    terms_url: null,
    privacy_url: null,
    logo_url: null,
  });
  const events = await http(`/api/v1/projects/${p.project.id}/audit-events?type=project.updated`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  const body = await events.json();
  const changed = body.data.find((e: { changes: Record<string, unknown> | null }) => e.changes?.branding);
  assert.ok(changed, JSON.stringify(body));
  assert.equal(changed.changes.branding.after.display_name, "Acme");
});

test("branding refuses a colour that is not one, a non-https link and a long name, with details", async () => {
  const p = await newProject();
  const cases: [Record<string, unknown>, string][] = [
    [{ primary_color: "red" }, "branding.primary_color"],
    [{ primary_color: "#12345" }, "branding.primary_color"],
    [{ primary_color: "#0f766e; background: url(x)" }, "branding.primary_color"],
    [{ terms_url: "http://acme.example.com/terms" }, "branding.terms_url"],
    [{ privacy_url: "javascript:alert(1)" }, "branding.privacy_url"],
    [{ terms_url: "/terms" }, "branding.terms_url"],
    [{ display_name: "x".repeat(51) }, "branding.display_name"],
  ];
  for (const [branding, field] of cases) {
    const res = await http(`/api/v1/projects/${p.project.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: p.project.name, branding }),
    });
    const err = await expectError(res, 400, "invalid_params");
    assert.ok(
      err.details?.some((d) => d.field === field),
      `${JSON.stringify(branding)}: ${JSON.stringify(err)}`,
    );
  }
  const loopback = await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    branding: { terms_url: "http://localhost:3000/terms" },
  });
  assert.equal(loopback.branding.terms_url, "http://localhost:3000/terms");
});

test("PUT …/branding/logo takes a PNG (SDK), a WebP and an SVG, served from this origin with their headers", async () => {
  const p = await newProject();
  const set = await p.api.projects.setProjectLogo(p.project.id, new Blob([PNG]));
  assert.match(set.logo_url, new RegExp(`^/branding/${p.project.id}/logo\\?v=[0-9a-f]{16}$`));
  assert.equal((await p.api.projects.getProject(p.project.id)).branding.logo_url, set.logo_url);
  for (const [type, body] of [["image/png", PNG], ["image/webp", WEBP], ["image/svg+xml", SVG]] as const) {
    const url = await logoOf(p, type, body);
    const res = await http(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), type);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.match(res.headers.get("cache-control") ?? "", /max-age=31536000/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.deepEqual(bytes, typeof body === "string" ? new TextEncoder().encode(body) : body);
    const csp = res.headers.get("content-security-policy");
    if (type === "image/svg+xml") assert.equal(csp, "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    else assert.equal(csp, null);
  }
  const removed = await http(`/api/v1/projects/${p.project.id}/branding/logo`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(removed.status, 204);
  assert.equal((await p.api.projects.getProject(p.project.id)).branding.logo_url, null);
  await expectError(await http(`/branding/${p.project.id}/logo`), 404, "not_found");
});

test("PUT …/branding/logo refuses a large image, a non-image and an SVG with anything active or external", async () => {
  const p = await newProject();
  const big = new Uint8Array(100 * 1024 + 1);
  big.set(PNG);
  const tooLarge = await expectError(await putLogo(p, big, "image/png"), 413, "invalid_params");
  assert.equal(tooLarge.details?.[0].field, "body");
  const svg = (inner: string, attrs = "") => `<svg xmlns="http://www.w3.org/2000/svg"${attrs}>${inner}</svg>`;
  const refused: [string, BodyInit, string, RegExp][] = [
    ["text/plain", "hello", "Content-Type", /image\/png, image\/webp or image\/svg\+xml/],
    ["image/png", "not a png at all, just text", "body", /not a PNG/],
    ["image/png", SVG, "body", /not a PNG/],
    ["image/png", PNG.slice(0, 40), "body", /PNG/],
    ["image/webp", PNG, "body", /not a WebP/],
    ["image/svg+xml", PNG, "body", /UTF-8|well-formed/],
    ["image/svg+xml", "<svg><rect></svg>", "body", /well-formed/],
    ["image/svg+xml", "<html><body/></html>", "body", /root element/],
    ["image/svg+xml", svg("<script>alert(1)</script>"), "body", /script/],
    ["image/svg+xml", svg("<rect/>", ' onload="alert(1)"'), "body", /event handler/],
    ["image/svg+xml", svg('<rect onclick="x()"/>'), "body", /event handler/],
    ["image/svg+xml", svg("<foreignObject><p>x</p></foreignObject>"), "body", /foreignObject/],
    [
      "image/svg+xml",
      svg('<image href="https://evil.example/x.png"/>', ' xmlns:xlink="http://www.w3.org/1999/xlink"'),
      "body",
      /image element/,
    ],
    [
      "image/svg+xml",
      svg('<a xlink:href="https://evil.example/"><rect/></a>', ' xmlns:xlink="http://www.w3.org/1999/xlink"'),
      "body",
      /outside itself/,
    ],
    ["image/svg+xml", svg('<rect fill="url(https://evil.example/p)"/>'), "body", /outside itself/],
    [
      "image/svg+xml",
      svg("<style>@import url(https://evil.example/s.css);</style>"),
      "body",
      /outside itself/,
    ],
    ["image/svg+xml", svg("<rect style=\"fill: url('//evil.example/p')\"/>"), "body", /outside itself/],
    [
      "image/svg+xml",
      svg("<style>rect { fill: \\75 rl(https://evil.example/p) }</style>"),
      "body",
      /CSS escape/,
    ],
    [
      "image/svg+xml",
      '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x "y">]>' + svg("<text>&x;</text>"),
      "body",
      /DOCTYPE/,
    ],
    ["image/svg+xml", '<?xml-stylesheet href="https://evil.example/s.css"?>' + svg(""), "body", /processing/],
  ];
  for (const [type, body, field, issue] of refused) {
    const err = await expectError(await putLogo(p, body, type), 400, "invalid_params");
    assert.equal(
      err.details?.[0].field,
      field,
      `${type} ${String(body).slice(0, 60)}: ${JSON.stringify(err)}`,
    );
    assert.match(err.details![0].issue, issue, `${String(body).slice(0, 60)}: ${JSON.stringify(err)}`);
  }
  assert.equal((await p.api.projects.getProject(p.project.id)).branding.logo_url, null, "nothing stored");
});

test("changing branding or the logo needs projects:update", async () => {
  const p = await newProject();
  const reader = await clientWith(p, ["projects:read"]);
  await expectError(putLogo(p, PNG, "image/png", reader.token), 403, "insufficient_permission");
  await expectError(
    reader.api.projects.updateProject(p.project.id, { name: p.project.name, branding: BRANDING }),
    403,
    "insufficient_permission",
  );
  const other = await newProject();
  await expectError(putLogo(p, PNG, "image/png", other.token), 403, "insufficient_permission");
  const updater = await clientWith(p, ["projects:update"]);
  assert.equal((await putLogo(p, PNG, "image/png", updater.token)).status, 200);
});

/** The login page of a branded project with a logo, as a browser first sees it. */
export async function brandedLogin(): Promise<
  Awaited<ReturnType<typeof loginProject>> & { logoUrl: string }
> {
  const p = await loginProject();
  await p.api.projects.updateProject(p.project.id, { name: p.project.name, branding: BRANDING });
  const logoUrl = await logoOf(p, "image/png", PNG);
  return { ...p, logoUrl };
}

/** The branding a page shows, and its strict CSP with no inline script. */
export function assertBranded(html: string, headers: Headers, logoUrl: string) {
  assert.match(html, /Acme Shop/);
  assert.ok(html.includes(`src="${logoUrl.replace(/^\//, "")}"`) || html.includes(logoUrl), "the logo");
  assert.match(html, /--brand: #0f766e;/);
  assert.ok(html.includes('href="https://acme.example.com/terms"'), "terms link");
  assert.ok(html.includes('href="https://acme.example.com/privacy"'), "privacy link");
  const csp = headers.get("content-security-policy") ?? "";
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /img-src 'self'/);
  assert.match(csp, /style-src 'nonce-[^']+'/);
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
    assert.match(m[1], /src="/, "no inline script");
    assert.equal(m[2].trim(), "", "no inline script");
  }
  assert.doesNotMatch(html, /\son[a-z]+="/, "no event handler attribute");
}

const openLogin = (clientId: string) =>
  openLoginPage({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  });

test("the login page and its reset page show the display name, logo, colour and links under the strict CSP", async () => {
  const p = await brandedLogin();
  const page = await openLogin(p.clientId);
  assert.equal(page.status, 200);
  assertBranded(page.html, page.headers, p.logoUrl);
  assert.match(page.html, /to continue to <strong>Acme Shop<\/strong>/);
  const resetUrl = /href="([^"]*\/authorize\/reset\?[^"]*)"/.exec(page.html)![1].replaceAll("&amp;", "&");
  const reset = await fetch(resetUrl, { headers: { cookie: page.cookie } });
  const html = await reset.text();
  assert.equal(reset.status, 200, html);
  assertBranded(html, reset.headers, p.logoUrl);
  // Live: a change shows on the next page, and a project without branding shows its own name and no footer.
  await p.api.projects.updateProject(p.project.id, { name: p.project.name, branding: {} });
  await http(`/api/v1/projects/${p.project.id}/branding/logo`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${p.token}` },
  });
  const plain = await openLogin(p.clientId);
  assert.ok(plain.html.includes(`<p class="brand-name" id="brand-name">${p.project.name}</p>`));
  assert.doesNotMatch(plain.html, /brand-logo"|--brand:|footer class="brand-links"/);
});

test("the account page shows the project's branding", async () => {
  const p = await brandedLogin();
  const browser = new Browser();
  await signIn(browser, p);
  const page = await browser.get("/account");
  const html = await page.text();
  assert.equal(page.status, 200, html);
  assertBranded(html, page.headers, p.logoUrl);
});

test(
  "in Chromium the branded sign-in page renders its logo with no CSP violation, in light and dark schemes",
  async () => {
    const p = await brandedLogin();
    const browser = await launch();
    try {
      for (
        const [colorScheme, type, logo] of [["light", "image/png", PNG], [
          "dark",
          "image/svg+xml",
          SVG,
        ]] as const
      ) {
        await logoOf(p, type, logo);
        const page = await browser.newPage({ colorScheme });
        const violations: string[] = [];
        page.on(
          "console",
          (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
        );
        page.on("pageerror", (e) => violations.push(e.message));
        const login = await openLogin(p.clientId);
        const url = /action="([^"]+)"/.exec(login.html)![1].replace(/\/authorize$/, "");
        await page.goto(`${url}/authorize?${new URLSearchParams({
          response_type: "code",
          client_id: p.clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          code_challenge_method: "S256",
        })}`);
        await page.waitForLoadState("load");
        // A string, as the page runs it: the tests are type-checked without the DOM's types.
        const shown = await page.evaluate(`(() => {
          const img = document.querySelector("#brand-logo");
          const button = document.querySelector("button[type=submit]");
          const link = document.querySelector("footer.brand-links a");
          return {
            complete: img.complete,
            naturalWidth: img.naturalWidth,
            name: document.querySelector("#brand-name").textContent,
            button: getComputedStyle(button).backgroundColor,
            buttonText: getComputedStyle(button).color,
            link: getComputedStyle(link).color,
          };
        })()`) as {
          complete: boolean;
          naturalWidth: number;
          name: string;
          button: string;
          buttonText: string;
          link: string;
        };
        assert.ok(shown.complete && shown.naturalWidth > 0, `${colorScheme}: ${JSON.stringify(shown)}`);
        assert.equal(shown.name, "Acme Shop");
        assert.equal(shown.button, "rgb(15, 118, 110)", colorScheme);
        assert.equal(shown.buttonText, "rgb(255, 255, 255)", colorScheme);
        // Links: the colour itself on white (it contrasts 5.5:1), lightened on the dark page.
        if (colorScheme === "light") assert.equal(shown.link, "rgb(15, 118, 110)");
        else assert.notEqual(shown.link, "rgb(15, 118, 110)");
        assert.deepEqual(violations, [], colorScheme);
        await page.close();
      }
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);

test("the second step's pages show the project's branding", async () => {
  const p = await brandedLogin();
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Required,
  });
  const browser = new Browser();
  const step = await passwordStep(browser, p);
  assert.equal(step.res.status, 200, step.html);
  assert.match(step.html, /Set up two-step verification/);
  assertBranded(step.html, step.res.headers, p.logoUrl);
  const again = await codeStep(browser, step, "000000");
  assert.equal(again.res.status, 400, again.html);
  assertBranded(again.html, again.res.headers, p.logoUrl);
});

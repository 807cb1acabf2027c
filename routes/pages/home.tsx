/**
 * `GET /`: a small page that says what this is and links the console, the API reference and the discovery
 * documents (JSON with the same links for `Accept: application/json`); and the service's icon, drawn here (SVG,
 * and the same picture as a 32×32 ICO for browsers that ask for /favicon.ico), with no asset from elsewhere.
 */
import type { Context } from "hono";
import { encodeBase64Url } from "../../domain/shared/base64.ts";
import type { App, AppEnv } from "../env.ts";

const NAME = "Access-Control Service";

/** Where everything is, as absolute URLs under PUBLIC_URL. */
export function linksOf(publicUrl: string) {
  return {
    name: NAME,
    console: `${publicUrl}/console`,
    docs: `${publicUrl}/docs`,
    openapi: `${publicUrl}/openapi.json`,
    openid_configuration: `${publicUrl}/.well-known/openid-configuration`,
    oauth_authorization_server: `${publicUrl}/.well-known/oauth-authorization-server`,
    jwks: `${publicUrl}/.well-known/jwks.json`,
    token_endpoint: `${publicUrl}/api/v1/tokens`,
  };
}

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; background: Canvas; color: CanvasText; }
main { max-width: 40rem; margin: 0 auto; padding: 2rem 1rem; }
h1 { display: flex; align-items: center; gap: .6rem; font-size: 1.6rem; margin: 0 0 .5rem; }
h1 img { width: 2rem; height: 2rem; }
h2 { font-size: 1.1rem; margin: 1.75rem 0 .5rem; }
a { color: LinkText; }
ul { padding-left: 1.2rem; } li { margin: .3rem 0; }
code { font-family: ui-monospace, monospace; font-size: .9em; }
li code { display: block; overflow-wrap: anywhere; color: GrayText; }
.primary a { display: inline-block; margin: .25rem .5rem .25rem 0; padding: .55rem 1rem; border-radius: .35rem;
  background: #1a56db; color: #fff; text-decoration: none; font-weight: 600; }
.primary a:focus-visible, a:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
`;

function HomePage(p: { nonce: string; links: ReturnType<typeof linksOf> }) {
  const l = p.links;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{NAME}</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <style nonce={p.nonce}>{STYLE}</style>
      </head>
      <body>
        <main>
          <h1>
            <img src="/favicon.svg" alt="" />
            {NAME}
          </h1>
          <p>
            An OAuth 2.0 and OpenID Connect authorization server that also keeps, per project, the resources,
            permissions, roles, users and clients that decide what a token's holder may do.
          </p>
          <p class="primary">
            <a href="/console">Admin console</a>
            <a href="/docs">API reference</a>
          </p>
          <h2>For clients and libraries</h2>
          <ul>
            <li>
              <a href="/.well-known/openid-configuration">OpenID Connect discovery</a>{" "}
              <code>{l.openid_configuration}</code>
            </li>
            <li>
              <a href="/.well-known/oauth-authorization-server">OAuth 2.0 authorization server metadata</a>
              {" "}
              <code>{l.oauth_authorization_server}</code>
            </li>
            <li>
              <a href="/.well-known/jwks.json">Signing keys (JWKS)</a> <code>{l.jwks}</code>
            </li>
            <li>
              <a href="/openapi.json">OpenAPI document</a> <code>{l.openapi}</code>
            </li>
            <li>
              Token endpoint <code>{l.token_endpoint}</code>
            </li>
          </ul>
        </main>
      </body>
    </html>
  );
}

/** JSON when the caller asks for it before (or instead of) HTML. */
function wantsJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const json = accept.indexOf("application/json");
  if (json < 0) return false;
  const html = accept.indexOf("text/html");
  return html < 0 || json < html;
}

/** A key in a rounded square: the picture behind the SVG and the ICO alike. */
const SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
  `<rect width="32" height="32" rx="7" fill="#1a56db"/>` +
  `<circle cx="16" cy="13" r="5" fill="#fff"/><path d="M13.5 15h5l1.5 10h-8z" fill="#fff"/></svg>`;

/** Whether a point of the 32×32 picture is inside the rounded square, and inside the keyhole. */
function shapeAt(x: number, y: number): { square: boolean; key: boolean } {
  const r = 7;
  const cx = Math.min(Math.max(x, r), 32 - r);
  const cy = Math.min(Math.max(y, r), 32 - r);
  const square = x >= 0 && x <= 32 && y >= 0 && y <= 32 && (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
  const inCircle = (x - 16) ** 2 + (y - 13) ** 2 <= 25;
  const half = 2.5 + (y - 15) * 0.15;
  const inStem = y >= 15 && y <= 25 && Math.abs(x - 16) <= half;
  return { square, key: inCircle || inStem };
}

/** The picture as a 32×32, 32-bit ICO (a BMP inside), sampled 4×4 per pixel so that its edges are smooth. */
function drawIco(): Uint8Array {
  const size = 32;
  const pixels = size * size * 4;
  const mask = size * 4; // 1 bit a pixel, rows padded to 4 bytes: all 0 (the alpha channel decides)
  const bytes = new Uint8Array(6 + 16 + 40 + pixels + mask);
  const v = new DataView(bytes.buffer);
  v.setUint16(2, 1, true); // an icon
  v.setUint16(4, 1, true); // one image
  v.setUint8(6, size);
  v.setUint8(7, size);
  v.setUint16(10, 1, true); // planes
  v.setUint16(12, 32, true); // bits a pixel
  v.setUint32(14, 40 + pixels + mask, true);
  v.setUint32(18, 22, true);
  v.setUint32(22, 40, true); // BITMAPINFOHEADER
  v.setInt32(26, size, true);
  v.setInt32(30, size * 2, true); // the picture and its mask
  v.setUint16(34, 1, true);
  v.setUint16(36, 32, true);
  v.setUint32(42, pixels + mask, true);
  const blue = [0x1a, 0x56, 0xdb];
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) {
      let square = 0, key = 0;
      for (let sy = 0; sy < 4; sy++) {
        for (let sx = 0; sx < 4; sx++) {
          const s = shapeAt(col + (sx + 0.5) / 4, row + (sy + 0.5) / 4);
          if (s.square) {
            square++;
            if (s.key) key++;
          }
        }
      }
      const white = square ? key / square : 0;
      const colour = blue.map((c) => Math.round(c + (255 - c) * white));
      const at = 62 + ((size - 1 - row) * size + col) * 4; // bottom-up rows, BGRA
      bytes[at] = colour[2];
      bytes[at + 1] = colour[1];
      bytes[at + 2] = colour[0];
      bytes[at + 3] = Math.round((square / 16) * 255);
    }
  }
  return bytes;
}

let ico: Uint8Array<ArrayBuffer> | undefined;
const ICON_CACHE = "public, max-age=2592000";

export function registerHomeRoutes(app: App) {
  app.get("/", (c: Context<AppEnv>) => {
    const links = linksOf(c.get("deps").config.publicUrl);
    c.header("Vary", "Accept");
    c.header("Cache-Control", "no-cache");
    if (wantsJson(c.req.header("accept"))) return c.json(links, 200);
    const nonce = encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
    c.header(
      "Content-Security-Policy",
      `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; ` +
        "form-action 'none'",
    );
    c.header("X-Frame-Options", "DENY");
    c.header("Referrer-Policy", "no-referrer");
    return c.html(`<!doctype html>${<HomePage nonce={nonce} links={links} />}`, 200);
  });

  app.get("/favicon.svg", (c: Context<AppEnv>) => {
    c.header("Content-Type", "image/svg+xml");
    c.header("Cache-Control", ICON_CACHE);
    c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
    return c.body(SVG);
  });

  app.get("/favicon.ico", (c: Context<AppEnv>) => {
    ico ??= drawIco() as Uint8Array<ArrayBuffer>;
    c.header("Content-Type", "image/x-icon");
    c.header("Cache-Control", ICON_CACHE);
    return c.body(ico);
  });
}

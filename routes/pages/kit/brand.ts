/**
 * A project's branding on its pages: the heading with the logo, the footer's links, and the primary colour as
 * CSS custom properties of the page's one nonce'd style sheet, with the text colours that keep it readable in
 * light and dark schemes (WCAG 2 contrast).
 */
import type { Context } from "hono";
import { html } from "hono/html";
import { type PageBranding, pageBranding } from "../../../domain/projects/branding.ts";
import type { AppEnv } from "../../env.ts";

export type Brand = PageBranding;

/** The project's branding for this page, read live (one read, no cache); null for an unknown project. */
export async function brandOf(c: Context<AppEnv>, projectId: string): Promise<Brand | null> {
  const { sql, config } = c.get("deps");
  return await pageBranding(sql, projectId, config.publicUrl);
}

/** The page's heading: the logo (this origin's) and the display name, else the project's name. */
export function brandHeader(brand: Brand) {
  return html`<header class="brand">
    ${brand.logo_url ? html`<img class="brand-logo" src="${brand.logo_url}" alt="" id="brand-logo">` : ""}
    <p class="brand-name" id="brand-name">${brand.name}</p>
  </header>`;
}

/** The footer's links to the project's terms and privacy policy, when it has them. */
export function brandFooter(brand: Brand) {
  if (!brand.terms_url && !brand.privacy_url) return "";
  return html`<footer class="brand-links">
    ${
    brand.terms_url ? html`<a href="${brand.terms_url}" rel="noopener noreferrer">Terms of service</a>` : ""
  }
    ${
    brand.privacy_url ? html`<a href="${brand.privacy_url}" rel="noopener noreferrer">Privacy policy</a>` : ""
  }
  </footer>`;
}

/** The layout's rules for the branded heading and footer, sent with every page. */
export const BRAND_STYLE = `
  header.brand { display: flex; align-items: center; gap: .75rem; margin: 0 0 1.25rem; }
  img.brand-logo { max-height: 3rem; max-width: 10rem; object-fit: contain; }
  p.brand-name { margin: 0; font-size: 1.15rem; font-weight: 700; overflow-wrap: anywhere; }
  footer.brand-links { display: flex; flex-wrap: wrap; justify-content: center; gap: .5rem 1.25rem;
                       margin: 1.5rem 0 0; padding-top: 1rem; border-top: 1px solid GrayText; font-size: .9rem; }
`;

type Rgb = [number, number, number];

/**
 * The custom properties of a primary colour: `--brand` (buttons' background), `--brand-text` (their text: black
 * or white, whichever contrasts more), and `--brand-link` (links and focus: the colour darkened, or in the dark
 * scheme lightened, until it reaches 4.5:1 against the page). Empty for no colour, or for a stored value that is
 * not `#rgb`/`#rrggbb` (the API refuses those; the page writes only numbers it parsed).
 */
export function brandColors(color: string | null): string {
  const rgb = color ? parseHex(color) : null;
  if (!rgb) return "";
  const text = contrast(rgb, [0, 0, 0]) >= contrast(rgb, [255, 255, 255]) ? "#000000" : "#ffffff";
  const light = towards(rgb, [0, 0, 0], [255, 255, 255]);
  // Chromium's dark Canvas is #121212; the lightened colour is readable on it and on anything darker.
  const dark = towards(rgb, [255, 255, 255], [0x12, 0x12, 0x12]);
  return `
  :root { --brand: ${hex(rgb)}; --brand-text: ${text}; --brand-link: ${hex(light)}; }
  @media (prefers-color-scheme: dark) {
    :root { --brand-link: ${hex(dark)}; }
    button:not(.secondary) { box-shadow: 0 0 0 1px var(--brand-link); }
  }
`;
}

function parseHex(color: string): Rgb | null {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color);
  if (!m) return null;
  const h = m[1].length === 3 ? [...m[1]].map((x) => x + x).join("") : m[1];
  return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)) as Rgb;
}

const hex = (c: Rgb) => "#" + c.map((x) => Math.round(x).toString(16).padStart(2, "0")).join("");

/** WCAG 2 relative luminance. */
function luminance(c: Rgb): number {
  const [r, g, b] = c.map((x) => {
    const s = x / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** `c` mixed towards `target` in steps until it contrasts 4.5:1 with `background`. */
function towards(c: Rgb, target: Rgb, background: Rgb): Rgb {
  for (let t = 0; t <= 1; t += 0.05) {
    const mixed = c.map((x, i) => x + (target[i] - x) * t) as Rgb;
    if (contrast(mixed, background) >= 4.5) return mixed;
  }
  return target;
}

/** The view fields of a project's page: its `brand`, and its `projectName` as the page says it (the display name). */
export async function brandFor(
  c: Context<AppEnv>,
  projectId: string,
  projectName: string,
): Promise<{ brand: Brand | null; projectName: string }> {
  const brand = await brandOf(c, projectId);
  return { brand, projectName: brand?.name ?? projectName };
}

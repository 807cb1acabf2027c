/**
 * A project's logo (checked, then stored as it came: PNG, WebP, or an SVG with nothing active or external in
 * it, refused rather than rewritten) and the branding its users' pages read, live, once per page.
 */
import { type Attr, DOMParser, type Element, type Node, type ProcessingInstruction } from "@xmldom/xmldom";
import { type Sql, transaction } from "../../db/connection.ts";
import {
  deleteLogo,
  findLogo,
  findPageBranding,
  type Logo,
  type LogoType,
  upsertLogo,
} from "../../db/projects/branding.ts";
import { findProject } from "../../db/projects/projects.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import type { Principal } from "../shared/principal.ts";

/** The largest logo, in bytes (100 KiB); the route refuses a longer body with 413 before it is read. */
export const LOGO_MAX_BYTES = 100 * 1024;
export const LOGO_TYPES: readonly LogoType[] = ["image/png", "image/webp", "image/svg+xml"];

/** The sides of a raster logo, in pixels: beyond, the header is not a sane one. */
const MAX_SIDE = 8192;

const refuse = (issue: string, field = "body"): never => {
  throw new AppError("invalid_params", { description: `the logo ${issue}`, details: [{ field, issue }] });
};

/** Checks the logo and stores it in place of any; recorded as `project.updated` with its `logo` change. */
export async function setLogo(
  sql: Sql,
  principal: Principal,
  projectId: string,
  contentType: string | undefined,
  image: Uint8Array<ArrayBuffer>,
): Promise<{ logo_url: string }> {
  const type = (contentType ?? "").split(";")[0].trim().toLowerCase() as LogoType;
  if (!LOGO_TYPES.includes(type)) refuse("must be image/png, image/webp or image/svg+xml", "Content-Type");
  if (image.length === 0) refuse("is empty");
  if (image.length > LOGO_MAX_BYTES) refuse(`must be at most ${LOGO_MAX_BYTES} bytes`);
  checkImage(type, image);
  const sha256 = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", image)));
  const logoUrl = logoPath(projectId, sha256);
  await transaction(sql, async (tx) => {
    const current = await findProject(tx, projectId, { lock: true });
    if (!current) throw new AppError("project_not_found");
    await upsertLogo(tx, projectId, { content_type: type, image, sha256 });
    await record(tx, {
      projectId,
      type: "project.updated",
      source: sourceOf(principal),
      target: { type: "project", id: projectId },
      changes: { "branding.logo_url": { before: current.branding.logo_url, after: logoUrl } },
    });
  });
  return { logo_url: logoUrl };
}

/** Removes the project's logo (nothing to remove is no error); recorded when there was one. */
export async function removeLogo(sql: Sql, principal: Principal, projectId: string): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findProject(tx, projectId, { lock: true });
    if (!current) throw new AppError("project_not_found");
    if (!(await deleteLogo(tx, projectId))) return;
    await record(tx, {
      projectId,
      type: "project.updated",
      source: sourceOf(principal),
      target: { type: "project", id: projectId },
      changes: { "branding.logo_url": { before: current.branding.logo_url, after: null } },
    });
  });
}

/** The logo of an active project, for its URL on this origin; undefined when there is none. */
export async function getLogo(sql: Sql, projectId: string): Promise<Logo | undefined> {
  return await findLogo(sql, projectId);
}

/** What a page of the project shows: the heading (display name, else the project's name), logo, colour, links. */
export type PageBranding = {
  name: string;
  logo_url: string | null;
  primary_color: string | null;
  terms_url: string | null;
  privacy_url: string | null;
};

/** The project's branding for one page, read live (no cache): a change shows on the next page. */
export async function pageBranding(
  sql: Sql,
  projectId: string,
  publicUrl: string,
): Promise<PageBranding | null> {
  const row = await findPageBranding(sql, projectId);
  if (!row) return null;
  return {
    name: row.display_name ?? row.name,
    logo_url: row.logo_sha256 ? publicUrl + logoPath(projectId, row.logo_sha256) : null,
    primary_color: row.primary_color,
    terms_url: row.terms_url,
    privacy_url: row.privacy_url,
  };
}

/** The logo's path on this origin, versioned by its hash (as db/projects/projects.ts writes `logo_url`). */
const logoPath = (projectId: string, sha256: string) =>
  `/branding/${encodeURIComponent(projectId)}/logo?v=${sha256.slice(0, 16)}`;

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Refuses an image that is not what its type says, with readable sides. */
export function checkImage(type: LogoType, image: Uint8Array): void {
  if (type === "image/png") return checkPng(image);
  if (type === "image/webp") return checkWebp(image);
  return checkSvg(image);
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const PNG_END = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

/** PNG: the signature, an IHDR chunk first with sane sides (PNG 1.2 §11.2.2), and the IEND chunk last. */
function checkPng(b: Uint8Array): void {
  if (b.length < 8 + 25 + 12 || !PNG_SIGNATURE.every((x, i) => b[i] === x)) refuse("is not a PNG image");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (view.getUint32(8) !== 13 || ascii(b, 12, 4) !== "IHDR") refuse("is not a PNG image: no IHDR header");
  sides(view.getUint32(16), view.getUint32(20));
  if (![1, 2, 4, 8, 16].includes(b[24]) || ![0, 2, 3, 4, 6].includes(b[25])) {
    refuse("is not a PNG image: bad bit depth or colour type");
  }
  if (!PNG_END.every((x, i) => b[b.length - 12 + i] === x)) refuse("is not a whole PNG image: no IEND chunk");
}

/** WebP: a RIFF container of type WEBP whose first chunk (VP8, VP8L or VP8X) gives sane sides. */
function checkWebp(b: Uint8Array): void {
  if (b.length < 30 || ascii(b, 0, 4) !== "RIFF" || ascii(b, 8, 4) !== "WEBP") refuse("is not a WebP image");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (view.getUint32(4, true) + 8 > b.length) refuse("is not a whole WebP image");
  const chunk = ascii(b, 12, 4);
  if (chunk === "VP8 ") {
    // RFC 6386 §9.1: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) refuse("is not a WebP image: bad VP8 frame");
    return sides(view.getUint16(26, true) & 0x3fff, view.getUint16(28, true) & 0x3fff);
  }
  if (chunk === "VP8L") {
    if (b[20] !== 0x2f) refuse("is not a WebP image: bad VP8L signature");
    const bits = view.getUint32(21, true);
    return sides((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === "VP8X") {
    const w = (b[24] | (b[25] << 8) | (b[26] << 16)) + 1;
    const h = (b[27] | (b[28] << 8) | (b[29] << 16)) + 1;
    return sides(w, h);
  }
  refuse("is not a WebP image: no VP8, VP8L or VP8X chunk");
}

function sides(width: number, height: number): void {
  if (width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
    refuse(`has unreadable or insane dimensions (${width}×${height}; 1 to ${MAX_SIDE} pixels a side)`);
  }
}

const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n));

/** Elements that run, embed or fetch something; a logo has no use for any of them. */
const FORBIDDEN = new Set([
  "script",
  "foreignobject",
  "iframe",
  "embed",
  "object",
  "audio",
  "video",
  "image",
  "feimage",
  "handler",
  "listener",
  "set",
  "animate",
  "animatemotion",
  "animatetransform",
]);

/**
 * SVG: well-formed XML (a maintained parser, @xmldom/xmldom, decides), an `svg` root, no DOCTYPE or entity,
 * no processing instruction but the XML declaration, no element of FORBIDDEN, no event handler attribute, and
 * no reference (href, src, url(), @import) to anything but a fragment of the same document.
 */
function checkSvg(b: Uint8Array): void {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    return refuse("is not an SVG image: not UTF-8 text");
  }
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) refuse("must not contain a DOCTYPE or entity declaration");
  let doc: ReturnType<DOMParser["parseFromString"]>;
  try {
    doc = new DOMParser({
      onError: (_level, message) => {
        throw new Error(message);
      },
    }).parseFromString(text, "image/svg+xml");
  } catch {
    return refuse("is not an SVG image: not well-formed XML");
  }
  const root = doc.documentElement;
  if (!root || root.localName !== "svg") refuse("is not an SVG image: its root element is not svg");
  const stack: Node[] = Array.from(doc.childNodes);
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.nodeType === 7 && (node as ProcessingInstruction).target.toLowerCase() !== "xml") {
      refuse("must not contain a processing instruction");
    }
    if (node.nodeType === 10) refuse("must not contain a DOCTYPE or entity declaration");
    if (node.nodeType === 3 || node.nodeType === 4) {
      const inStyle = (node.parentNode as Element | null)?.localName?.toLowerCase() === "style";
      checkStyleText(node.nodeValue ?? "", inStyle);
    }
    if (node.nodeType !== 1) continue;
    const el = node as Element;
    const name = (el.localName ?? el.nodeName).toLowerCase();
    if (name === "script") refuse("must not contain a script");
    if (name === "foreignobject") refuse("must not contain a foreignObject");
    if (FORBIDDEN.has(name)) {
      refuse(`must not contain a ${el.localName} element (it runs or fetches something)`);
    }
    for (const attr of Array.from(el.attributes)) checkAttribute(attr);
    stack.push(...Array.from(el.childNodes));
  }
}

function checkAttribute(attr: Attr): void {
  const name = (attr.localName ?? attr.name).toLowerCase();
  const value = attr.value.trim();
  if (name.startsWith("on")) refuse(`must not contain an event handler attribute (${attr.name})`);
  if ((name === "href" || name === "src") && !value.startsWith("#")) {
    refuse(`must not refer to anything outside itself (${attr.name}="${value.slice(0, 40)}")`);
  }
  checkStyleText(value, name === "style");
}

/**
 * `url(…)` to anything but a fragment, `@import`, or a `javascript:` URL in a text or attribute value; and in a
 * style sheet, any CSS escape, which could spell `url(` in a way the search above does not see.
 */
function checkStyleText(text: string, css = false): void {
  if (css && text.includes("\\")) refuse("must not contain a CSS escape (\\) in a style");
  const lower = text.toLowerCase();
  if (lower.includes("@import") || lower.includes("javascript:")) {
    refuse("must not refer to anything outside itself (@import or javascript:)");
  }
  for (const m of lower.matchAll(/url\s*\(\s*(['"]?)\s*([^)]*)\)/g)) {
    if (!m[2].startsWith("#")) {
      refuse(`must not refer to anything outside itself (url(${m[2].slice(0, 40)}))`);
    }
  }
}

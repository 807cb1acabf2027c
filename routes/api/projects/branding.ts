/** A project's logo: uploaded and removed through the API, served from this origin at a URL its hash versions. */
import { z } from "@hono/zod-openapi";
import { getLogo, LOGO_MAX_BYTES, removeLogo, setLogo } from "../../../domain/projects/branding.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import { ProjectIdParam } from "../../../openapi/fields.ts";
import type { App } from "../../env.ts";
import { EdgeError } from "../../errors.ts";
import { guardedRoute, publicRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";

const Image = z.string().openapi({ type: "string", format: "binary" });
const LogoSet = z.object({
  logo_url: z.string().openapi({
    description: "The logo's URL, relative to this service's origin; it changes with the image",
    example: "/branding/0f1e2d3c4b5a/logo?v=6f1ed002ab5595d1",
  }),
}).openapi("LogoSet");

const LOGO_RULES = "At most 100 KiB (102,400 bytes; 413 `invalid_params` beyond). PNG and WebP must have " +
  "readable sides of 1 to 8192 pixels. An SVG must be well-formed XML with an `svg` root and nothing active or " +
  "external: no DOCTYPE or entity, no `script`, `foreignObject`, `image`, animation or embedding " +
  "element, no `on*` event handler attribute, and no `href`, `src` or `url()` to anything but a `#fragment` " +
  "of the same document. It is refused (400 `invalid_params` with `details`), never rewritten.";

export const setProjectLogoRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/branding/logo",
  operationId: "setProjectLogo",
  tags: ["Projects"],
  summary: "Set the project's logo",
  permission: "projects:update",
  scope: "own-or-system",
  description: "The image is the request body, sent as `image/png`, `image/webp` or `image/svg+xml`; it " +
    "replaces any logo, is stored in the database and shown on every page the project's users see " +
    `(docs/branding.md). ${LOGO_RULES} Recorded as \`project.updated\`.`,
  request: {
    params: ProjectIdParam,
    body: {
      required: true,
      content: {
        "image/png": { schema: Image },
        "image/webp": { schema: Image },
        "image/svg+xml": { schema: Image },
      },
    },
  },
  responses: { 200: jsonResponse(LogoSet, "The logo's new URL") },
  errors: ["invalid_params"],
});

export const deleteProjectLogoRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/branding/logo",
  operationId: "deleteProjectLogo",
  tags: ["Projects"],
  summary: "Remove the project's logo",
  permission: "projects:update",
  scope: "own-or-system",
  description: "The pages show the heading alone again. Answers 204, also when there was no logo; " +
    "recorded as `project.updated` when there was one.",
  request: { params: ProjectIdParam },
  responses: { 204: { description: "Removed" } },
});

export const getProjectLogoRoute = publicRoute({
  method: "get",
  path: "/branding/{project_id}/logo",
  operationId: "getProjectLogo",
  tags: ["Projects"],
  summary: "A project's logo",
  description: "The logo of an active project, as the pages its users see show it; public. Link it as the " +
    "project's `branding.logo_url` says: the `v` parameter changes with the image, so the answer may be cached " +
    "for a year (`immutable`). Sent with `X-Content-Type-Options: nosniff`, and an SVG with " +
    "`Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; sandbox`, so that opened on its " +
    "own it can run and fetch nothing.",
  request: { params: ProjectIdParam },
  responses: {
    200: {
      description: "The image",
      content: {
        "image/png": { schema: Image },
        "image/webp": { schema: Image },
        "image/svg+xml": { schema: Image },
      },
    },
  },
  errors: ["not_found"],
});

export function registerBrandingRoutes(app: App) {
  app.openapi(setProjectLogoRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    let image: ArrayBuffer;
    try {
      image = await c.req.arrayBuffer();
    } catch {
      throw new AppError("invalid_params", { details: [{ field: "body", issue: "could not be read" }] });
    }
    // The body limit answers a declared length over it; this, a body sent without one.
    if (image.byteLength > LOGO_MAX_BYTES) {
      throw new EdgeError("body_too_large", {
        description: "the logo is larger than 100 KiB",
        details: [{ field: "body", issue: `at most ${LOGO_MAX_BYTES} bytes` }],
      });
    }
    const type = c.req.header("content-type");
    const set = await setLogo(c.get("deps").sql, c.get("principal"), project_id, type, new Uint8Array(image));
    return c.json(set, 200);
  });
  app.openapi(deleteProjectLogoRoute, async (c) => {
    await removeLogo(c.get("deps").sql, c.get("principal"), c.req.valid("param").project_id);
    return c.body(null, 204) as never;
  });
  app.openapi(getProjectLogoRoute, async (c) => {
    const logo = await getLogo(c.get("deps").sql, c.req.valid("param").project_id);
    if (!logo) throw new AppError("not_found", { description: "the project has no logo" });
    c.header("Content-Type", logo.content_type);
    c.header("Cache-Control", "public, max-age=31536000, immutable");
    c.header("ETag", `"${logo.sha256}"`);
    c.header("X-Content-Type-Options", "nosniff");
    if (logo.content_type === "image/svg+xml") {
      c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    }
    return c.body(new Uint8Array(logo.image), 200) as never;
  });
}

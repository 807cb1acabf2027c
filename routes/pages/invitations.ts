/**
 * GET and POST /authorize/invitation: the page an organization's invitation mails a link to
 * (docs/organizations.md § Invitations), under /authorize so that the pages' browser cookie reaches it. The
 * form carries the link's token and a CSRF token derived from that cookie; the page has the login page's headers
 * (CSP without script, no referrer).
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import {
  acceptInvitation,
  INVITATION_PATH,
  type InvitationState,
  invitationState,
  InvitationUnusable,
} from "../../domain/organizations/invitations.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { brandFor } from "./kit/brand.ts";
import { browserOf, csrfMatches, csrfOf } from "./kit/csrf.ts";
import { formLimit } from "./kit/forms.ts";
import { page, type PageStatus } from "./kit/headers.ts";
import { invitationPage, invitationProblemPage, joinedPage } from "./views/invitations.ts";

const STALE = "This invitation was accepted, revoked or has expired. Ask the person who invited you for a " +
  "new one.";
const UNKNOWN = "This invitation link is not valid. Open the link from the mail again, whole.";
const UNVERIFIED =
  "An account with this address exists, but its address is not confirmed. Sign in to it and " +
  "confirm the address (or choose a new password with “Forgot your password?”), then open this link again.";
const INACTIVE = "The account with this address, or this application, is disabled. Ask its team.";
const EXPIRED_FORM = "This page has expired or was not opened in this browser. Open the link again.";

/** The page for a state that offers no form, with its status. */
function problemOf(state: InvitationState): { message: string; status: PageStatus } | null {
  switch (state.state) {
    case "unknown":
      return { message: UNKNOWN, status: 400 };
    case "stale":
      return { message: STALE, status: 400 };
    case "unverified":
      return { message: UNVERIFIED, status: 403 };
    case "inactive":
      return { message: INACTIVE, status: 403 };
    default:
      return null;
  }
}

async function problem(c: Context<AppEnv>, state: InvitationState, message: string, status: PageStatus) {
  const brand = "link" in state
    ? (await brandFor(c, state.link.project_id, state.link.project_name)).brand
    : null;
  return page(c, (nonce) => invitationProblemPage({ nonce, brand, message }), status);
}

const actionOf = (c: Context<AppEnv>) => `${c.get("deps").config.publicUrl}${INVITATION_PATH}`;

/** GET /authorize/invitation?token=… */
async function showInvitation(c: Context<AppEnv>): Promise<Response> {
  const token = c.req.query("token") ?? "";
  const state = await invitationState(c.get("deps").sql, token);
  const refused = problemOf(state);
  if (refused || !("link" in state)) return await problem(c, state, refused!.message, refused!.status);
  const { link } = state;
  const { brand, projectName } = await brandFor(c, link.project_id, link.project_name);
  const csrf = csrfOf(browserOf(c));
  return page(c, (nonce) =>
    invitationPage({
      nonce,
      brand,
      projectName,
      organizationName: link.organization_name,
      action: actionOf(c),
      csrf,
      token,
      email: link.email,
      create: state.state === "create",
    }));
}

/** POST /authorize/invitation */
async function submitInvitation(c: Context<AppEnv>): Promise<Response> {
  const sql = c.get("deps").sql;
  if (!/^application\/x-www-form-urlencoded(;|$)/i.test(c.req.header("content-type") ?? "")) {
    return page(c, (nonce) => invitationProblemPage({ nonce, message: EXPIRED_FORM }), 403);
  }
  const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
  const token = form.token ?? "";
  if (!csrfMatches(c, form.csrf)) {
    return page(c, (nonce) => invitationProblemPage({ nonce, message: EXPIRED_FORM }), 403);
  }
  const state = await invitationState(sql, token);
  const refused = problemOf(state);
  if (refused || !("link" in state)) return await problem(c, state, refused!.message, refused!.status);
  const fields = {
    name: form.name ?? "",
    password: form.password ?? "",
    password_repeat: form.password_repeat ?? "",
  };
  let outcome;
  try {
    outcome = await acceptInvitation(sql, token, state.state === "create" ? fields : null, requestInfo(c));
  } catch (err) {
    if (!(err instanceof InvitationUnusable)) throw err;
    return await problem(c, state, STALE, 400);
  }
  const { link } = state;
  const { brand, projectName } = await brandFor(c, link.project_id, link.project_name);
  if ("errors" in outcome) {
    return page(c, (nonce) =>
      invitationPage({
        nonce,
        brand,
        projectName,
        organizationName: link.organization_name,
        action: actionOf(c),
        csrf: form.csrf,
        token,
        email: link.email,
        create: true,
        name: fields.name.slice(0, 50),
        errors: outcome.errors,
      }), 400);
  }
  return page(c, (nonce) =>
    joinedPage({
      nonce,
      brand,
      projectName,
      organizationName: link.organization_name,
      created: state.state === "create",
    }));
}

// Documented for the reference page; the handlers answer pages, not JSON.
const showDoc: RouteConfig = {
  method: "get",
  path: INVITATION_PATH,
  operationId: "invitationPage",
  tags: ["Login"],
  summary: "The page of an organization's invitation link",
  description: "Opened from an invitation's mail (docs/organizations.md § Invitations). A pending " +
    'invitation shows "Join <organization>": one button for a user of the project with the address (its ' +
    "address verified), or a form for a name and a password when no user has it. A user who has the address " +
    "unverified is asked to sign in and confirm it first (403), so that the link never joins an account " +
    "someone else made with the address. Accepted, revoked, expired or unknown: an error page (400).",
  request: { query: z.object({ token: z.string().openapi({ description: "The link's token" }) }) },
  responses: {
    200: { description: "The invitation page" },
    400: { description: "An error page: the link is not valid, or no longer works" },
    403: { description: "An error page: the address's account is unverified or disabled" },
  },
};

const submitDoc: RouteConfig = {
  method: "post",
  path: INVITATION_PATH,
  operationId: "acceptInvitation",
  tags: ["Login"],
  summary: "Accept an organization's invitation",
  description:
    "Spends the invitation (once, of concurrent submissions one wins) and makes the user a member " +
    "with its roles that are still organization roles of the project (a member already gains them); without " +
    "a user of the address, creates one first with the name and password (the address verified, no project " +
    "role). One transaction with `organization.invitation_accepted`, `organization.member_added` (or " +
    "`member_updated`) and, for a new user, `user.created` (`how: invitation`). The page then says to go " +
    "back to the application and sign in.",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({
            token: z.string(),
            csrf: z.string(),
            name: z.string().optional().openapi({ description: "Without an account: 1 to 50 characters" }),
            password: z.string().optional().openapi({
              description: "Without an account: 8 to 1024 characters",
            }),
            password_repeat: z.string().optional(),
          }),
        },
      },
    },
  },
  responses: {
    200: { description: '"You joined"' },
    400: { description: "The form again with the error under its field, or an error page" },
    403: { description: "An error page: not a form of this browser's page, or an account that cannot join" },
    413: { description: "A form larger than 16 KiB: an error page" },
  },
};

export function registerInvitationPages(app: App) {
  app.get(INVITATION_PATH, showInvitation);
  app.post(INVITATION_PATH, formLimit("The invitation form is too large."));
  app.post(INVITATION_PATH, submitInvitation);
  app.openAPIRegistry.registerPath(showDoc);
  app.openAPIRegistry.registerPath(submitDoc);
}

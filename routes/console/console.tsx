/** The admin console at /console: server-rendered pages that act only through the admin API (see session.ts). */
import { bodyLimit } from "hono/body-limit";
import { LOGO_MAX_BYTES } from "../../domain/projects/branding.ts";
import type { App } from "../env.ts";
import { registerAuditPage } from "./audit.tsx";
import { registerConsoleAuth } from "./auth.tsx";
import { registerClientPages } from "./clients.tsx";
import { registerProjectHome } from "./project_home.tsx";
import { registerProjectPages } from "./projects.tsx";
import { registerResourcePages } from "./resources.tsx";
import { registerDeletionPages } from "./deletion.tsx";
import { registerGrantPages } from "./grants.tsx";
import { registerObjectPages } from "./objects.tsx";
import { registerRolePages } from "./roles.tsx";
import { registerSessionPages } from "./sessions.tsx";
import { registerUserPages } from "./users.tsx";
import { registerWebhookPages } from "./webhooks.tsx";
import { registerSignInSettings } from "./settings/sign_in.tsx";
import { registerBrandingPage } from "./settings/branding.tsx";
import { registerIdentityProviderPages } from "./settings/identity_providers.tsx";
import { registerOrganizationListPages } from "./organizations/list.tsx";
import { registerOrganizationPage } from "./organizations/page.tsx";
import { registerMemberPages } from "./organizations/members.tsx";
import { registerInvitationPages } from "./organizations/invitations.tsx";

const SCRIPT = Deno.readTextFileSync(new URL("../assets/console.js", import.meta.url));

export function registerConsoleRoutes(app: App) {
  // Console forms are small; anything larger is refused before it is read. A logo's upload may carry the
  // API's largest logo and the multipart envelope around it; the API checks the image itself.
  const small = bodyLimit({ maxSize: 64 * 1024, onError: (c) => c.text("The form is too large.", 413) });
  const logo = bodyLimit({
    maxSize: LOGO_MAX_BYTES + 16 * 1024,
    onError: (c) => c.text("The logo is larger than 100 KiB.", 413),
  });
  app.post("/console/*", (c, next) => (c.req.path.endsWith("/branding/logo") ? logo : small)(c, next));
  app.get("/console/assets/console.js", (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=3600");
    c.header("X-Content-Type-Options", "nosniff");
    return c.body(SCRIPT);
  });
  registerConsoleAuth(app);
  registerProjectPages(app);
  registerProjectHome(app);
  registerResourcePages(app);
  registerObjectPages(app);
  registerGrantPages(app);
  registerRolePages(app);
  registerUserPages(app);
  registerSessionPages(app);
  registerClientPages(app);
  registerAuditPage(app);
  registerDeletionPages(app);
  registerWebhookPages(app);
  registerSignInSettings(app);
  registerBrandingPage(app);
  registerIdentityProviderPages(app);
  // The list and `…/organizations/new` before an organization's own pages (`…/organizations/:oid`).
  registerOrganizationListPages(app);
  registerOrganizationPage(app);
  registerMemberPages(app);
  registerInvitationPages(app);
}

/**
 * Where the sign-in pages lead after a right credential (a password, a passkey, an upstream provider): the second
 * step's page, the code of a factor or the enrolment of one. And which project's console a login page is for.
 */
import type { Context } from "hono";
import { consoleClientId } from "../../domain/console/client.ts";
import { type SecondStep, startLoginEnrolment, startSecondStep } from "../../domain/factors/second_step.ts";
import type { AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { mfaSettings } from "../settings.ts";
import { formSettings } from "./kit/forms.ts";
import { qrSvg } from "./kit/qr_svg.ts";
import { enrolInLoginPage, secondFactorPage } from "./views/login.ts";

/**
 * The page after a right password (or a step-up of a browser session): the code of the user's factor, or the
 * enrolment of one; the login request now waits for it.
 */
export async function showSecondStep(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: { id: string; project_id: string; project_name: string };
    csrf: string;
    userId: string;
    step: Exclude<SecondStep, "none">;
    amr?: string[];
  },
): Promise<Response> {
  const { sql } = c.var.deps;
  const { action } = formSettings(c);
  await startSecondStep(sql, p.req, p.userId, p.amr);
  const common = {
    nonce: p.nonce,
    action: `${action}/mfa`,
    projectName: p.req.project_name,
    requestId: p.req.id,
    csrf: p.csrf,
  };
  if (p.step === "code") return c.html(secondFactorPage(common), 200);
  const enrolment = await startLoginEnrolment(sql, mfaSettings(c), {
    projectId: p.req.project_id,
    userId: p.userId,
    request: requestInfo(c),
  });
  return c.html(enrolInLoginPage({ ...common, ...enrolPicture(enrolment) }), 200);
}

export const enrolPicture = (t: { secret: string; otpauth_uri: string }) => ({
  secret: t.secret,
  qrSvg: qrSvg(t.otpauth_uri, "QR code of the key for your authenticator app"),
});

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */

/**
 * The project whose console this login is for, or undefined for any other client: the login page shows its ID,
 * which no other project can share (its name is anyone's to choose), so that a link to another tenant's console
 * sign-in shows as one.
 */
export const consoleProject = (clientId: string, projectId: string) =>
  clientId === consoleClientId(projectId) ? projectId : undefined;

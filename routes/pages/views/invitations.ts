/**
 * The page an invitation's link opens (routes/pages/invitations.ts): join with one button, or create the
 * account first (a name and a password), and what it says when the link no longer works. No script.
 */
import { html } from "hono/html";
import type { Brand } from "../kit/brand.ts";
import { layout } from "../kit/layout.ts";

type Common = { nonce: string; brand?: Brand | null; projectName: string; organizationName: string };

type Field = "name" | "password" | "password_repeat";

const under = (errors: Partial<Record<Field, string>>, f: Field) =>
  errors[f] ? html`<p class="field-error" id="${f}-error" role="alert">${errors[f]}</p>` : "";
const invalid = (errors: Partial<Record<Field, string>>, f: Field) =>
  errors[f] ? html`aria-invalid="true" aria-describedby="${f}-error"` : "";

/** A pending invitation: one button for a user who has an account, a short form for one who has none. */
export function invitationPage(
  p: Common & {
    action: string;
    csrf: string;
    token: string;
    email: string;
    /** No account has the address: the form creates one. */
    create: boolean;
    name?: string;
    errors?: Partial<Record<Field, string>>;
  },
) {
  const errors = p.errors ?? {};
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Join ${p.organizationName}` },
    html`
      <h1>Join ${p.organizationName}</h1>
      <p class="lead">on <strong>${p.projectName}</strong>, as <strong>${p.email}</strong>.</p>
      <form method="post" action="${p.action}" novalidate>
        <input type="hidden" name="token" value="${p.token}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        ${p.create
          ? html`
            <p>You have no account yet: choose your name and a password to create it.</p>
            <label for="name">Name</label>
            <input id="name" name="name" type="text" autocomplete="name" required maxlength="50"
              value="${p.name ?? ""}" ${invalid(errors, "name")} autofocus>
            ${under(errors, "name")}
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8"
              maxlength="1024" ${invalid(errors, "password")}>
            <p class="hint">At least 8 characters.</p>
            ${under(errors, "password")}
            <label for="password_repeat">Repeat the password</label>
            <input id="password_repeat" name="password_repeat" type="password" autocomplete="new-password" required
              maxlength="1024" ${invalid(errors, "password_repeat")}>
            ${under(errors, "password_repeat")}
            <button type="submit">Create the account and join</button>
          `
          : html`<button type="submit">Join ${p.organizationName}</button>`}
      </form>
    `,
  );
}

/** After joining: back to the application, which can now sign the user in to the organization. */
export function joinedPage(p: Common & { created: boolean }) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `You joined ${p.organizationName}` },
    html`
      <h1>You joined ${p.organizationName}</h1>
      <p class="notice"
        role="status">${p.created
          ? html`Your account at <strong>${p.projectName}</strong> is ready, and you`
          : html`You`} are now a member of <strong>${p
          .organizationName}</strong>. Go back to the application and sign in.</p>
    `,
  );
}

/** A link that cannot be used now, and why, in the reader's words. */
export function invitationProblemPage(
  p: Omit<Common, "organizationName" | "projectName"> & { message: string },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Invitation" },
    html`
      <h1>This invitation cannot be used</h1>
      <p class="error" role="alert" id="error">${p.message}</p>
    `,
  );
}

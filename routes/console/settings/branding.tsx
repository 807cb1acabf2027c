/**
 * Console page of a project's branding: the display name, primary colour, terms and privacy links (saved through
 * `PUT /api/v1/projects/{id}`), and the logo, previewed from its served URL, uploaded and removed through
 * `PUT`/`DELETE …/branding/logo`: the admin API as the signed-in user, so its permission, checks and audit apply.
 */
import type { Project } from "../../../openapi/projects.ts";
import type { App } from "../../env.ts";
import { Alert, Csrf, Field, Layout, type Problem, problemOf } from "../layout.tsx";
import { pid, projectApi, projectPath, refusedPage, type Scope, scopeOf } from "../projects.tsx";
import { type Console, html, signedIn } from "../session.ts";

const FIELDS = ["display_name", "primary_color", "terms_url", "privacy_url"] as const;
type Values = Record<(typeof FIELDS)[number], string>;

const valuesOf = (p: Project): Values => ({
  display_name: p.branding.display_name ?? "",
  primary_color: p.branding.primary_color ?? "",
  terms_url: p.branding.terms_url ?? "",
  privacy_url: p.branding.privacy_url ?? "",
});

const posted = (k: Console): Values => Object.fromEntries(FIELDS.map((f) => [f, k.field(f)])) as Values;

function BrandingForm(
  p: { k: Console; v: Values; problem: Problem | null; action: string; readonly: boolean },
) {
  const { v, problem } = p;
  const f = (name: keyof Values) => ({ name, value: v[name], problem, apiField: `branding.${name}` });
  return (
    <form method="post" action={p.action}>
      <Csrf k={p.k} back={p.action} />
      <fieldset disabled={p.readonly}>
        <legend>What the project's users see</legend>
        <Field
          {...f("display_name")}
          label="Display name"
          hint="The pages' heading; empty: the project's name."
        />
        <Field
          {...f("primary_color")}
          label="Primary colour"
          hint="Of buttons and links: #rgb or #rrggbb, such as #0f766e; empty: the service's own."
        />
        <Field
          {...f("terms_url")}
          label="Terms of service URL"
          type="url"
          hint="https; linked in the footer."
        />
        <Field
          {...f("privacy_url")}
          label="Privacy policy URL"
          type="url"
          hint="https; linked in the footer."
        />
        {!p.readonly && <button type="submit">Save branding</button>}
      </fieldset>
    </form>
  );
}

function LogoForms(p: { k: Console; s: Scope; problem: Problem | null; action: string; readonly: boolean }) {
  const logo = p.s.project.branding.logo_url;
  const error = p.problem?.fields["body"] ?? p.problem?.fields["Content-Type"];
  return (
    <section aria-labelledby="logo-heading">
      <h2 id="logo-heading">Logo</h2>
      {logo
        ? <img id="logo-preview" src={logo} alt={`The logo of ${p.s.project.name}`} height="64" />
        : <p>No logo: the pages show the heading alone.</p>}
      <form method="post" action={`${p.action}/logo`} enctype="multipart/form-data">
        <Csrf k={p.k} back={p.action} />
        <fieldset disabled={p.readonly}>
          <label for="f-logo">Upload a logo</label>
          <p class="hint" id="f-logo-hint">
            PNG, WebP or SVG (no script or external references), at most 100 KiB; it replaces the current one.
          </p>
          <input
            type="file"
            id="f-logo"
            name="logo"
            accept="image/png,image/webp,image/svg+xml"
            required
            aria-describedby={["f-logo-hint", error ? "f-logo-error" : ""].filter(Boolean).join(" ")}
          />
          {error && <p class="field-error" id="f-logo-error">{error}</p>}
          {!p.readonly && <button type="submit">Upload logo</button>}
        </fieldset>
      </form>
      {logo && !p.readonly && (
        <form method="post" action={`${p.action}/logo/delete`}>
          <Csrf k={p.k} back={p.action} />
          <button type="submit" class="danger">Remove logo</button>
        </form>
      )}
    </section>
  );
}

type Shown = { values?: Values | null; problem?: Problem | null; logoProblem?: Problem | null };

async function page(k: Console, shown: Shown = {}) {
  let s: Scope;
  try {
    s = await scopeOf(k, pid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  const action = `${projectPath(s.project.id)}/branding`;
  // Without projects:read the page knows only the project's id: nothing to show, nothing to save.
  const readonly = !s.can("projects:update") || !s.project.created_at;
  const problem = shown.problem ?? shown.logoProblem ?? null;
  const done = k.c.req.query("done");
  return html(
    k.c,
    (nonce) => (
      <Layout nonce={nonce} title="Branding" k={k} project={s.project} tab="branding" operator={s.operator}>
        <h1>Branding</h1>
        <Alert problem={problem} notice={done ? `${done === "logo" ? "Logo" : "Branding"} saved.` : null} />
        <BrandingForm
          k={k}
          v={shown.values ?? valuesOf(s.project)}
          problem={shown.problem ?? null}
          action={action}
          readonly={readonly}
        />
        <LogoForms k={k} s={s} problem={shown.logoProblem ?? null} action={action} readonly={readonly} />
        {readonly && <p class="hint">You may read the branding; changing it needs projects:update.</p>}
      </Layout>
    ),
    problem ? 400 : 200,
  );
}

const back = (k: Console, done: string) => k.c.redirect(`${projectPath(pid(k))}/branding?done=${done}`, 303);

async function saveBranding(k: Console) {
  const v = posted(k);
  let s: Scope;
  try {
    s = await scopeOf(k, pid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  if (!s.project.created_at) return page(k, { values: v, problem: { message: "Not allowed.", fields: {} } });
  const branding = Object.fromEntries(FIELDS.map((f) => [f, v[f] || null]));
  const res = await k.api("PUT", projectApi(s.project.id), { name: s.project.name, branding });
  if (!res.ok) return page(k, { values: v, problem: problemOf(res) });
  return back(k, "branding");
}

async function uploadLogo(k: Console) {
  const file = k.upload("logo");
  if (!file) return page(k, { logoProblem: { message: "Choose an image to upload.", fields: {} } });
  const bytes = new Uint8Array(await file.arrayBuffer());
  const res = await k.api(
    "PUT",
    `${projectApi(pid(k))}/branding/logo`,
    bytes,
    file.type || "application/octet-stream",
  );
  if (!res.ok) return page(k, { logoProblem: problemOf(res) });
  return back(k, "logo");
}

async function removeLogo(k: Console) {
  const res = await k.api("DELETE", `${projectApi(pid(k))}/branding/logo`);
  if (!res.ok) return page(k, { logoProblem: problemOf(res) });
  return k.c.redirect(`${projectPath(pid(k))}/branding`, 303);
}

export function registerBrandingPage(app: App) {
  app.get("/console/projects/:pid/branding", signedIn(app, (k) => page(k)));
  app.post("/console/projects/:pid/branding", signedIn(app, saveBranding));
  app.post("/console/projects/:pid/branding/logo", signedIn(app, uploadLogo));
  app.post("/console/projects/:pid/branding/logo/delete", signedIn(app, removeLogo));
}

/** Console pages of a project's users: create, edit, role, activate or deactivate, set a password. */
import type { User } from "../../openapi/users.ts";
import type { App } from "../env.ts";
import { Active, CopyId, parsedProperties, problemOf, SortTh } from "./layout.tsx";
import { areaApi, projectPath, recordNow, refusedPage } from "./projects.tsx";
import { ApiRefusal, type Console, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";
import { editPage, type Values } from "./user_page.tsx";

const api = (k: Console) => areaApi(k, "users");
const uid = (k: Console) => k.c.req.param("uid")!;
const usersPath = (k: Console) => `${projectPath(k.c.req.param("pid")!)}/users`;

function registerUserList(app: App) {
  registerAreaList<User>(app, {
    area: "users",
    title: "Users",
    noun: "user",
    searchLabel: "Search users by name or email",
    head: (q) => (
      <>
        <SortTh query={q} field="display_name" label="Name" />
        <SortTh query={q} field="email" label="Email or external id" />
        <SortTh query={q} field="is_active" label="State" class="wide" />
      </>
    ),
    row: (u, href) => (
      <>
        <td>
          <a href={href}>{u.display_name}</a>
          <span class="sub">
            <CopyId id={u.id} label={`user id of ${u.display_name}`} />
          </span>
        </td>
        <td>
          {u.email ?? u.external_user_id}
          {u.email ? <span class="sub">{u.email_verified ? "verified" : "not verified"}</span> : ""}
        </td>
        <td class="wide">
          <Active on={u.is_active} />
        </td>
      </>
    ),
  });
}

const values = (k: Console): Values => ({
  display_name: k.field("display_name"),
  given_name: k.field("given_name"),
  family_name: k.field("family_name"),
  email: k.field("email"),
  external_user_id: k.field("external_user_id"),
  role_id: k.field("role_id"),
  password: k.list("password")[0] ?? "",
  is_active: k.field("is_active") === "true",
  properties: k.field("properties"),
});

const body = (v: Values, create: boolean, properties: unknown) => ({
  properties,
  display_name: v.display_name,
  given_name: v.given_name || null,
  family_name: v.family_name || null,
  email: v.email || null,
  external_user_id: v.external_user_id || null,
  role_id: v.role_id || null,
  is_active: v.is_active,
  ...(v.password || create ? { password: v.password || null } : {}),
});

const showNewUser = (k: Console) => editPage(k, null, null, null);

async function createUser(k: Console) {
  const v = values(k);
  const properties = parsedProperties(v.properties);
  if ("problem" in properties) return editPage(k, null, { ...v, password: "" }, properties.problem);
  const res = await k.api("POST", api(k), body(v, true, properties.value));
  if (!res.ok) return editPage(k, null, { ...v, password: "" }, problemOf(res));
  return k.c.redirect(`${usersPath(k)}?done=1`, 303);
}

async function showUser(k: Console) {
  const res = await k.api<User>("GET", `${api(k)}/${encodeURIComponent(uid(k))}?include_permissions=true`);
  if (res.status === 404) return k.notFound();
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  return editPage(k, res.body, null, null);
}

/** Mails the user a password reset link, the invitation again, or a verification link. */
async function mailUser(k: Console) {
  const op = k.c.req.param("op")!;
  const res = await k.api("POST", `${api(k)}/${encodeURIComponent(uid(k))}/${op}`);
  if (!res.ok) {
    const current = await recordNow<User>(k, api(k), uid(k));
    return editPage(k, current, null, problemOf(res));
  }
  return k.c.redirect(`${usersPath(k)}/${encodeURIComponent(uid(k))}?mailed=${op}`, 303);
}

async function saveUser(k: Console) {
  const v = values(k);
  const properties = parsedProperties(v.properties);
  if ("problem" in properties) {
    return editPage(k, await recordNow<User>(k, api(k), uid(k)), { ...v, password: "" }, properties.problem);
  }
  const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(uid(k))}`, body(v, false, properties.value));
  if (!res.ok) {
    const current = await recordNow<User>(k, api(k), uid(k));
    return editPage(k, current, { ...v, password: "" }, problemOf(res));
  }
  return k.c.redirect(`${usersPath(k)}?done=1`, 303);
}

export function registerUserPages(app: App) {
  registerUserList(app);
  app.get("/console/projects/:pid/users/new", signedIn(app, showNewUser));
  app.post("/console/projects/:pid/users/new", signedIn(app, createUser));
  app.get("/console/projects/:pid/users/:uid", signedIn(app, showUser));
  app.post(
    "/console/projects/:pid/users/:uid/mail/:op{password-reset|invitation|verification}",
    signedIn(app, mailUser),
  );
  app.post("/console/projects/:pid/users/:uid", signedIn(app, saveUser));
}

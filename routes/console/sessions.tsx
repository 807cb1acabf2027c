/**
 * The console's page of a user's login sessions: the list (client, created, last used, address, browser), and
 * "Sign out" of one session or of all of them ("sign out everywhere"), through the admin API as the user.
 */
import { readableUserAgent } from "../../domain/shared/user_agent.ts";
import type { Session } from "../../openapi/sessions.ts";
import type { User } from "../../openapi/users.ts";
import type { App } from "../env.ts";
import {
  Active,
  Alert,
  Csrf,
  Layout,
  listQuery,
  type Page,
  Pager,
  type Problem,
  problemOf,
  SearchBox,
  Time,
} from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "./session.ts";

const usersApi = (k: Console) => areaApi(k, "users");
const sessionsApi = (k: Console) => `${usersApi(k)}/${encodeURIComponent(k.c.req.param("uid")!)}/sessions`;
const pagePath = (k: Console) =>
  `${projectPath(k.c.req.param("pid")!)}/users/${encodeURIComponent(k.c.req.param("uid")!)}/sessions`;

const NOTICES: Record<string, string> = {
  one: "The session was signed out.",
  all: "The user was signed out everywhere.",
};

/** `2026-01-31T12:00:00.000Z` as `2026-01-31 12:00:00 UTC`. */
const when = (t: string) => `${t.replace("T", " ").slice(0, 19)} UTC`;

/** The clients of the sessions by name, each looked up once; one the API does not show (the console's own) keeps its id. */
async function clientNames(k: Console, sessions: Session[]): Promise<Map<string, string>> {
  const clients = new Map<string, string>();
  await Promise.all([...new Set(sessions.map((x) => x.client_id))].map(async (id) => {
    const client = await k.api<{ name: string }>("GET", `${areaApi(k, "clients")}/${encodeURIComponent(id)}`);
    if (client.ok) clients.set(id, client.body.name);
  }));
  return clients;
}

type Row = { k: Console; session: Session; clients: Map<string, string>; base: string; mayEnd: boolean };

function SessionRow(p: Row) {
  const { session, clients } = p;
  return (
    <tr>
      <td>
        {clients.get(session.client_id)}
        <span class={clients.has(session.client_id) ? "sub" : undefined}>
          <code>{session.client_id}</code>
        </span>
      </td>
      <td>
        <Time at={session.created_at} />
      </td>
      <td>
        <Time at={session.last_used_at} />
      </td>
      <td class="wide">{session.ip ?? "unknown"}</td>
      <td class="wide">
        <span title={session.user_agent ?? undefined}>{readableUserAgent(session.user_agent)}</span>
      </td>
      {p.mayEnd && (
        <td>
          <form method="post" action={`${p.base}/${encodeURIComponent(session.id)}/end`}>
            <Csrf k={p.k} back={p.base} />
            <button
              type="submit"
              class="danger"
              aria-label={`Sign out the session of ${session.client_id} from ${when(session.created_at)}`}
            >
              Sign out
            </button>
          </form>
        </td>
      )}
    </tr>
  );
}

function SessionsTable(p: Omit<Row, "session"> & { sessions: Session[] }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="hint">Newest first</caption>
        <thead>
          <tr>
            <th scope="col">Client</th>
            <th scope="col">Signed in</th>
            <th scope="col">Last used</th>
            <th scope="col" class="wide">Address</th>
            <th scope="col" class="wide">Browser</th>
            {p.mayEnd && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {p.sessions.map((session) => <SessionRow key={session.id} {...p} session={session} />)}
        </tbody>
      </table>
    </div>
  );
}

function EndAllForm(p: { k: Console; base: string }) {
  return (
    <form method="post" action={`${p.base}/end-all`}>
      <h2>Sign out everywhere</h2>
      <p class="hint">Ends every session of the user, single sign-on browser sessions included.</p>
      <Csrf k={p.k} back={p.base} />
      <button type="submit" class="danger">Sign out everywhere</button>
    </form>
  );
}

type SessionsProps = {
  nonce: string;
  k: Console;
  s: Scope;
  user: User;
  q: URLSearchParams;
  page: Page<Session>;
  clients: Map<string, string>;
  problem: Problem | null;
};

function SessionsPage(p: SessionsProps) {
  const { k, s, user, page, problem } = p;
  const base = pagePath(k);
  const mayEnd = s.can("users:update");
  const notice = NOTICES[new URL(k.c.req.url).searchParams.get("done") ?? ""] ?? null;
  const title = `Sessions of ${user.display_name}`;
  return (
    <Layout nonce={p.nonce} title={title} k={k} project={s.project} tab="sessions" operator={s.operator}>
      <p class="crumbs">
        <a href={`${projectPath(s.project.id)}/sessions`}>Sessions</a> ›
      </p>
      <h1>{title}</h1>
      <p>
        <a href={`${projectPath(s.project.id)}/users/${encodeURIComponent(user.id)}`}>Back to the user</a>
      </p>
      <Alert problem={problem} notice={problem ? null : notice} />
      <p class="hint">
        Each session is one sign-in through one client. Signing a session out revokes its refresh token; its
        access tokens are refused from their next request.
      </p>
      {page.data.length === 0
        ? <p>No live sessions.</p>
        : <SessionsTable k={k} sessions={page.data} clients={p.clients} base={base} mayEnd={mayEnd} />}
      <Pager query={p.q} page={page} noun="session" />
      {mayEnd && <EndAllForm k={k} base={base} />}
    </Layout>
  );
}

async function sessionsPage(k: Console, problem: Problem | null) {
  let s: Scope, found: User | null;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    found = await findIn<User>(k, usersApi(k), k.c.req.param("uid")!);
  } catch (err) {
    return refusedPage(k, err);
  }
  if (!found) return k.notFound();
  const user = found;
  const q = new URLSearchParams({ page_size: "20" });
  const n = new URL(k.c.req.url).searchParams.get("page_num");
  if (n) q.set("page_num", n);
  const res = await k.api<Page<Session>>("GET", `${sessionsApi(k)}?${q}`);
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const page = res.body;
  const clients = await clientNames(k, page.data);
  const props = { k, s, user, q, page, clients, problem };
  return html(k.c, (nonce) => <SessionsPage nonce={nonce} {...props} />, problem ? 400 : 200);
}

function UsersTable(p: { users: string; page: Page<User> }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col" class="wide">State</th>
            <th scope="col">Sessions</th>
          </tr>
        </thead>
        <tbody>
          {p.page.data.map((u) => (
            <tr key={u.id}>
              <td>
                <a href={`${p.users}/${encodeURIComponent(u.id)}`}>{u.display_name}</a>
                <span class="sub">{u.email ?? u.external_user_id}</span>
              </td>
              <td class="wide">
                <Active on={u.is_active} />
              </td>
              <td>
                <a
                  href={`${p.users}/${encodeURIComponent(u.id)}/sessions`}
                  aria-label={`Sessions of ${u.display_name}`}
                >
                  Sessions
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The project's Sessions tab: sessions belong to a user, so it finds the user first. */
async function sessionsHome(k: Console) {
  const q = listQuery(k);
  let s: Scope, page: Page<User>;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    page = await k.get<Page<User>>(`${usersApi(k)}?${q}`);
  } catch (err) {
    return refusedPage(k, err);
  }
  const users = `${projectPath(s.project.id)}/users`;
  return html(
    k.c,
    (nonce) => (
      <Layout nonce={nonce} title="Sessions" k={k} project={s.project} tab="sessions" operator={s.operator}>
        <h1>Sessions</h1>
        <p class="hint">
          A session is one sign-in of a user through one client. Find the user to see their sessions and sign
          them out.
        </p>
        <SearchBox query={q} label="Search users by name or email" />
        <UsersTable users={users} page={page} />
        <Pager query={q} page={page} noun="user" />
      </Layout>
    ),
  );
}

const showSessions = (k: Console) => sessionsPage(k, null);

async function endAll(k: Console) {
  const res = await k.api("DELETE", sessionsApi(k));
  if (!res.ok) return sessionsPage(k, problemOf(res));
  return k.c.redirect(`${pagePath(k)}?done=all`, 303);
}

async function endOne(k: Console) {
  const res = await k.api("DELETE", `${sessionsApi(k)}/${encodeURIComponent(k.c.req.param("sid")!)}`);
  if (!res.ok) return sessionsPage(k, problemOf(res));
  return k.c.redirect(`${pagePath(k)}?done=one`, 303);
}

export function registerSessionPages(app: App) {
  app.get("/console/projects/:pid/sessions", signedIn(app, sessionsHome));
  app.get("/console/projects/:pid/users/:uid/sessions", signedIn(app, showSessions));
  app.post("/console/projects/:pid/users/:uid/sessions/end-all", signedIn(app, endAll));
  app.post("/console/projects/:pid/users/:uid/sessions/:sid/end", signedIn(app, endOne));
}

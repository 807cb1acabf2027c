/**
 * The list page of one area of a project (resources, roles, users, clients, organizations): heading, create
 * button (when the signed-in user may create), search, a sortable table with links to each record, and the
 * pager; all from the admin API's list with the page's query.
 */
import type { Child } from "hono/jsx";
import type { App } from "../env.ts";
import { Alert, Layout, listQuery, type Page, Pager, SearchBox } from "./layout.tsx";
import { projectApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { html, signedIn } from "./session.ts";

export type Area = "resources" | "roles" | "users" | "clients" | "organizations";

export function registerAreaList<T extends { id: string }>(app: App, o: {
  area: Area;
  title: string;
  /** The record's name in "Create …". */
  noun: string;
  searchLabel: string;
  /** The header cells, given the page's query (for sortable headers). */
  head: (query: URLSearchParams) => Child;
  /** A record's cells; `href` is its page. */
  row: (item: T, href: string) => Child;
}) {
  app.get(
    `/console/projects/:pid/${o.area}`,
    signedIn(app, async (k) => {
      const q = listQuery(k);
      const pid = k.c.req.param("pid")!;
      let s: Scope, page: Page<T>;
      try {
        s = await scopeOf(k, pid);
        page = await k.get<Page<T>>(`${projectApi(pid, o.area)}?${q}`);
      } catch (err) {
        return refusedPage(k, err);
      }
      const base = `${projectPath(s.project.id)}/${o.area}`;
      return html(
        k.c,
        (nonce) => (
          <Layout nonce={nonce} title={o.title} k={k} project={s.project} tab={o.area} operator={s.operator}>
            <h1>{o.title}</h1>
            <Alert notice={k.c.req.query("done") ? "Saved." : k.c.req.query("deleted") ? "Deleted." : null} />
            {s.can(`${o.area}:create`) && <a class="button" href={`${base}/new`}>Create {o.noun}</a>}
            <SearchBox query={q} label={o.searchLabel} />
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>{o.head(q)}</tr>
                </thead>
                <tbody>
                  {page.data.map((item) => (
                    <tr key={item.id}>{o.row(item, `${base}/${encodeURIComponent(item.id)}`)}</tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager query={q} page={page} noun={o.noun} />
          </Layout>
        ),
      );
    }),
  );
}

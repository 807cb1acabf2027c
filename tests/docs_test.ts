/**
 * The README and the guides in docs/ stay true to the repository: every relative link reaches a file (and a
 * heading, for an #anchor), every `deno task` they name exists, the configuration guide lists every variable
 * config.ts reads, and the README stays short. Reads files only: no service, no database.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** README.md and every Markdown file under docs/, as paths relative to the repository. */
async function documents(): Promise<string[]> {
  const found = ["README.md"];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".md")) found.push(path);
    }
  };
  await walk("docs");
  return found.sort();
}

const read = (path: string) => Deno.readTextFile(new URL(path, ROOT));

/** The text outside fenced code blocks and inline code, where links live. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** Link targets: inline links and images `[text](target "title")`, and reference definitions `[x]: target`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]);
  return [...inline, ...references];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[`*_]/g, "").replace(/[^\p{L}\p{N}\s-]/gu, "").replace(
    /\s/g,
    "-",
  );
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

async function exists(url: URL): Promise<boolean> {
  try {
    await Deno.stat(url);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

Deno.test("every relative link in README.md and docs/ reaches a file, and a heading when it names one", async () => {
  const broken: string[] = [];
  let checked = 0;
  for (const doc of await documents()) {
    const source = await read(doc);
    for (const target of linkTargets(source)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like
      checked++;
      const [path, anchor] = target.split("#", 2);
      const url = path === "" ? new URL(doc, ROOT) : new URL(decodeURI(path), new URL(doc, ROOT));
      if (!url.href.startsWith(ROOT.href)) {
        broken.push(`${doc}: ${target} (outside the repository)`);
        continue;
      }
      if (!(await exists(url))) {
        broken.push(`${doc}: ${target} (no such file)`);
        continue;
      }
      if (anchor !== undefined && url.pathname.endsWith(".md")) {
        if (!anchors(await Deno.readTextFile(url)).has(anchor)) {
          broken.push(`${doc}: ${target} (no such heading)`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked > 20, `only ${checked} relative links found: is the link pattern still right?`);
});

Deno.test("every `deno task` that README.md and docs/ name is a task of deno.json", async () => {
  const { tasks } = JSON.parse(await read("deno.json")) as { tasks: Record<string, string> };
  const unknown: string[] = [];
  let named = 0;
  for (const doc of await documents()) {
    for (const m of (await read(doc)).matchAll(/deno task ([A-Za-z0-9][\w:-]*)/g)) {
      named++;
      if (!(m[1] in tasks)) unknown.push(`${doc}: deno task ${m[1]}`);
    }
  }
  assert.deepEqual(unknown, []);
  assert.ok(named > 5);
});

Deno.test("docs/configuration.md lists every environment variable that config.ts reads", async () => {
  const source = await read("config.ts");
  const start = source.indexOf("const schema = z.object({");
  const end = source.indexOf("}).superRefine(", start);
  assert.ok(start >= 0 && end > start, "config.ts's schema is no longer where this test looks for it");
  const variables = [...source.slice(start, end).matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
  assert.ok(variables.length > 20);
  const guide = await read("docs/configuration.md");
  const listed = new Set([...guide.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]));
  assert.deepEqual(variables.filter((v) => !listed.has(v)), []);
  assert.deepEqual(
    [...listed].filter((v) => !variables.includes(v)),
    [],
    "a variable config.ts does not read",
  );
});

Deno.test("README.md stays a front page: at most 250 lines, and it says how to run the tests on PostgreSQL", async () => {
  const readme = await read("README.md");
  assert.ok(readme.split("\n").length <= 250, `README.md has ${readme.split("\n").length} lines`);
  assert.match(readme, /DATABASE_URL=postgres:\/\/\S+ deno task test/);
});

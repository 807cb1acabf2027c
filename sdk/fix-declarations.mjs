// After tsc: the declaration files keep the sources' `./x.ts` specifiers (tsc rewrites them only in the .js
// files); point them at the `./x.js` files beside them, as every TypeScript version and resolution mode expects.
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

async function* declarations(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* declarations(path);
    else if (entry.name.endsWith(".d.ts")) yield path;
  }
}

for await (const path of declarations(new URL("./dist/", import.meta.url).pathname)) {
  const source = await readFile(path, "utf8");
  await writeFile(path, source.replace(/(from\s+["']\.{1,2}\/[^"']+)\.ts(["'])/g, "$1.js$2"));
}

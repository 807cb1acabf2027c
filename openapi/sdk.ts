/**
 * `deno task sdk`: generates the TypeScript fetch SDK from openapi/openapi.json into sdk/ with
 * @openapi-generator-plus/typescript-fetch-client-generator, then gives its relative imports the `.ts`
 * extension Deno needs. `--out DIR` writes elsewhere (the drift test compares the two).
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));

export async function generateSdk(outDir: string): Promise<void> {
  const config = await Deno.makeTempFile({ suffix: ".yml" });
  await Deno.writeTextFile(
    config,
    [
      `inputPath: ${JSON.stringify(join(root, "openapi/openapi.json"))}`,
      `outputPath: ${JSON.stringify(outDir)}`,
      `generator: "@openapi-generator-plus/typescript-fetch-client-generator"`,
      "includePolyfills: false",
      "dateApproach: string",
      "",
    ].join("\n"),
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys",
      "npm:openapi-generator-plus",
      "-c",
      config,
    ],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(config);
  if (!out.success) throw new Error(`SDK generation failed:\n${new TextDecoder().decode(out.stderr)}`);
  for await (const entry of Deno.readDir(outDir)) {
    if (!entry.name.endsWith(".ts")) continue;
    const path = join(outDir, entry.name);
    const source = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, source.replace(/from "(\.\/[\w-]+)"/g, 'from "$1.ts"'));
  }
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const outDir = i >= 0 ? Deno.args[i + 1] : join(root, "sdk");
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  await generateSdk(outDir);
  console.log(`generated ${relative(Deno.cwd(), outDir) || "."}`);
}

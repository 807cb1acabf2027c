/**
 * `deno task sdk`: generates the TypeScript fetch client from openapi/openapi.json into sdk/src/generated/ (the
 * generator's folder; the package around it, sdk/, is written by hand) with
 * @openapi-generator-plus/typescript-fetch-client-generator, then gives its relative imports the `.ts`
 * extension that Deno needs (and that tsc rewrites to `.js` when it builds the package for Node), types the
 * document's free-form objects (`additionalProperties: {}`: `properties`, an AuthZEN `context`) as maps of
 * `unknown` where the generator writes maps of `string` (their values are any JSON), and drops the generator's
 * README (the package has its own). `--out DIR` writes elsewhere (the drift test compares).
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** Where the generated client lives; nothing else may be kept there, `deno task sdk` empties it. */
export const GENERATED_DIR = join(root, "sdk/src/generated");

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
  // The generator and its dependencies have a configuration (and node_modules) of their own, so that
  // `deno task start` never downloads them.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--config",
      join(root, "openapi/generator/deno.json"),
      "--frozen",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys",
      "npm:openapi-generator-plus@2.22.0",
      "-c",
      config,
    ],
    cwd: join(root, "openapi/generator"),
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(config);
  if (!out.success) throw new Error(`SDK generation failed:\n${new TextDecoder().decode(out.stderr)}`);
  await Deno.remove(join(outDir, "README.md")).catch(() => {});
  for await (const entry of Deno.readDir(outDir)) {
    if (!entry.name.endsWith(".ts")) continue;
    const path = join(outDir, entry.name);
    const source = await Deno.readTextFile(path);
    await Deno.writeTextFile(
      path,
      source
        .replace(/from "(\.\/[\w-]+)"/g, 'from "$1.ts"')
        // Every map in the document is free-form but one (an audit event's `changes`, typed by its own schema).
        .replaceAll("{ [name: string]: string }", "{ [name: string]: unknown }")
        // A JSON lines answer (an export) is handed back as the Response, to be read as it streams.
        .replaceAll(
          "return response; /* Unsupported mimeType */",
          "return response as any; /* Unsupported mimeType */",
        ),
    );
  }
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const outDir = i >= 0 ? Deno.args[i + 1] : GENERATED_DIR;
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  await generateSdk(outDir);
  console.log(`generated ${relative(Deno.cwd(), outDir) || "."}`);
}

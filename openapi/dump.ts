/** `deno task openapi`: writes openapi/openapi.json from the route definitions. */
import { buildOpenApiDocument, OPENAPI_PATH, serialize } from "./document.ts";

await Deno.writeTextFile(OPENAPI_PATH, serialize(buildOpenApiDocument()));
console.log(`wrote ${OPENAPI_PATH.pathname}`);

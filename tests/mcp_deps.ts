/**
 * The Model Context Protocol's TypeScript SDK, unmodified, for tests/mcp_test.ts only: apart from tests/deps.ts
 * so that no other test file loads it, and pinned here for the same reason (`deno task start` never downloads
 * it).
 */
export { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
export { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
export {
  type OAuthClientProvider,
  UnauthorizedError,
} from "npm:@modelcontextprotocol/sdk@1.32.2/client/auth.js";
export { McpServer } from "npm:@modelcontextprotocol/sdk@1.32.2/server/mcp.js";
export { WebStandardStreamableHTTPServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js";

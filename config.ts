/** The one place that reads the environment: a zod schema, parsed once at start. */
import { z } from "zod";

const seconds = (fallback: number) => z.coerce.number().int().min(1).max(31_536_000).default(fallback);

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  HOST: z.string().min(1).default("0.0.0.0"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  DATA_DIR: z.string().min(1).default("./data"),
  // Unreserved characters only, so that `curl -u system-admin:$SECRET` works without form-encoding.
  BOOTSTRAP_ADMIN_SECRET: z.string().min(32, "must be at least 32 characters")
    .regex(/^[A-Za-z0-9._~-]+$/, "may contain only letters, digits and . _ ~ -").optional(),
  ACCESS_TOKEN_TTL: seconds(900),
  REFRESH_TOKEN_TTL: seconds(604_800),
  AUTH_CODE_TTL: seconds(60),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
});

export type Config = {
  port: number;
  host: string;
  /** The issuer: the service's public URL without a trailing slash. */
  publicUrl: string;
  databaseUrl?: string;
  databasePoolSize: number;
  dataDir: string;
  bootstrapAdminSecret?: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  authCodeTtl: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** How many reverse proxies in front append to X-Forwarded-For (0: use the connection's address). */
  trustProxyHops: number;
};

/** Parses an environment (by default the process's); throws one readable error listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const blank = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(blank);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT || 8000}`).replace(/\/+$/, "");
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dataDir: e.DATA_DIR,
    bootstrapAdminSecret: e.BOOTSTRAP_ADMIN_SECRET,
    accessTokenTtl: e.ACCESS_TOKEN_TTL,
    refreshTokenTtl: e.REFRESH_TOKEN_TTL,
    authCodeTtl: e.AUTH_CODE_TTL,
    logLevel: e.LOG_LEVEL,
    trustProxyHops: e.TRUST_PROXY_HOPS,
  };
}

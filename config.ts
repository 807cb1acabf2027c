/** The one place that reads the environment: a zod schema, parsed once at start. */
import { Buffer } from "node:buffer";
import { z } from "zod";
import type { Deadlines } from "./db/connection.ts";
import { HEAP_DEFAULTS, HEAP_RANGES } from "./heap.ts";
import { estimatedEntropyBits, MIN_SECRET_BITS } from "./domain/shared/secret_strength.ts";
import { parseSmtpUrl, type SmtpTarget } from "./domain/events/smtp.ts";
import type { LogFormat, LogLevel } from "./log.ts";

const decodeBase64Url = (v: string) => new Uint8Array(Buffer.from(v, "base64url"));

const seconds = (fallback: number) => z.coerce.number().int().min(1).max(31_536_000).default(fallback);

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  HOST: z.string().min(1).default("0.0.0.0"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  DATABASE_PIPELINE_DEPTH: z.coerce.number().int().min(0).max(100).default(16),
  DATABASE_APPLICATION_NAME: z.string().regex(
    /^[\x20-\x7e]{1,63}$/,
    "must be 1 to 63 printable ASCII characters (PostgreSQL's application_name)",
  ).default("access-control"),
  DATABASE_POOLER: z.enum(["none", "session", "transaction"], {
    error: "must be none, session or transaction (what sits between the service and PostgreSQL)",
  }).default("none"),
  DATABASE_DIRECT_URL: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(),
  DATABASE_START_TIMEOUT: z.coerce.number().int().min(1).max(600).default(15),
  DATABASE_STATEMENT_TIMEOUT: z.coerce.number().min(0.1).max(600).default(5),
  DATABASE_QUEUE_TIMEOUT: z.coerce.number().min(0.1).max(600).default(5),
  DATA_DIR: z.string().min(1).default("./data"),
  EMBEDDED_CACHE_DIR: z.string().min(1).optional(),
  // Unreserved characters only, so that `curl -u system-admin:$SECRET` works without form-encoding.
  BOOTSTRAP_ADMIN_SECRET: z.string().min(32, "must be at least 32 characters")
    .regex(/^[A-Za-z0-9._~-]+$/, "may contain only letters, digits and . _ ~ -")
    .refine(
      (s) => estimatedEntropyBits(s) >= MIN_SECRET_BITS,
      {
        error: (issue) =>
          `is too weak (about ${Math.floor(estimatedEntropyBits(String(issue.input)))} bits of estimated ` +
          "entropy; at least 128 are needed): use a random value, e.g. `openssl rand -hex 32`",
      },
    ).optional(),
  BOOTSTRAP_ADMIN_EMAIL: z.email("must be an email address").max(100).optional(),
  BOOTSTRAP_ADMIN_PASSWORD: z.string().min(8, "must be at least 8 characters").max(1024).optional(),
  ACCESS_TOKEN_TTL: seconds(900),
  REFRESH_TOKEN_TTL: seconds(604_800),
  SESSION_MAX_TTL: seconds(2_592_000),
  AUTH_CODE_TTL: seconds(60),
  SSO_IDLE_TTL: seconds(86_400),
  SSO_TTL: seconds(1_209_600),
  SIGNING_ALG: z.enum(["EdDSA", "ES256", "RS256"]).default("EdDSA"),
  SIGNING_KEY_ROTATION_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  KEY_ENCRYPTION_KEY: z.string().refine(
    (v) => /^[A-Za-z0-9_-]{43}$/.test(v) && decodeBase64Url(v).length === 32,
    "must be 32 random bytes in base64url without padding (43 characters), e.g. " +
      "`openssl rand 32 | basenc --base64url | tr -d =`",
  ).optional(),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
  GRANT_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(30),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z.enum(["true", "false"]).default("false"),
  // Tests shorten the schedule; production keeps 5 (about a day of retries in all).
  WEBHOOK_RETRY_BASE_SECONDS: z.coerce.number().min(0.1, "must be at least 0.1").max(3600, "at most 3600")
    .default(5),
  // Mail: without SMTP_URL, mails are written to the log (the zero-setup start).
  SMTP_URL: z.string().superRefine((v, ctx) => {
    try {
      parseSmtpUrl(v);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
    }
  }).optional(),
  MAIL_FROM: z.string().max(200).refine(
    (v) => /^[^\r\n<>]*<[^\s<>@]+@[^\s<>@]+>$|^[^\s<>@]+@[^\s<>@]+$/.test(v.trim()),
    "must be an address (no-reply@example.com) or a name and an address (Example <no-reply@example.com>)",
  ).optional(),
  PASSWORD_RESET_TTL: seconds(1800),
  INVITATION_TTL: seconds(604_800),
  EMAIL_VERIFICATION_TTL: seconds(86_400),
  // Tests shorten the schedule; production keeps 5 (about 4 hours of retries in all).
  MAIL_RETRY_BASE_SECONDS: z.coerce.number().min(0.001, "must be at least 0.001").max(3600, "at most 3600")
    .default(5),
  // The service thread's JavaScript heap: its young generation and its old-generation ceiling. Checked here with
  // the rest; main.ts reads them (heap.ts) before any of this is loaded, to start the thread.
  HEAP_YOUNG_GENERATION_MB: z.coerce.number().int().min(HEAP_RANGES.youngGenerationMb[0])
    .max(HEAP_RANGES.youngGenerationMb[1]).default(HEAP_DEFAULTS.youngGenerationMb),
  HEAP_LIMIT_MB: z.coerce.number().int().min(HEAP_RANGES.limitMb[0]).max(HEAP_RANGES.limitMb[1])
    .default(HEAP_DEFAULTS.limitMb),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  LOG_FORMAT: z.enum(["json", "pretty"], { error: "must be json or pretty" }).default("json"),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  METRICS_TOKEN: z.string().min(32, "must be at least 32 characters").max(1024).refine(
    (s) => estimatedEntropyBits(s) >= MIN_SECRET_BITS,
    "is too weak (at least 128 bits of estimated entropy are needed): use a random value, e.g. " +
      "`openssl rand -hex 32`",
  ).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z.string().regex(
    /^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/,
    "must be key=value pairs separated by commas",
  ).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).max(200).default("access-control"),
  /** Set by Deno Deploy in every deployment: there is no local disk for the embedded database. */
  DENO_DEPLOYMENT_ID: z.string().optional(),
}).superRefine((e, ctx) => {
  if (e.DENO_DEPLOYMENT_ID && !e.DATABASE_URL) {
    ctx.addIssue({
      code: "custom",
      path: ["DATABASE_URL"],
      message: "is required on Deno Deploy, which has no local disk for the embedded database: " +
        "set it to a PostgreSQL server's postgres:// URL",
    });
  }
  if (e.DENO_DEPLOYMENT_ID && !e.PUBLIC_URL) {
    ctx.addIssue({
      code: "custom",
      path: ["PUBLIC_URL"],
      message: "is required on Deno Deploy: the deployment's https:// URL, which is the tokens' issuer",
    });
  }
  if (e.BOOTSTRAP_ADMIN_PASSWORD && !e.BOOTSTRAP_ADMIN_EMAIL) {
    ctx.addIssue({
      code: "custom",
      path: ["BOOTSTRAP_ADMIN_PASSWORD"],
      message: "needs BOOTSTRAP_ADMIN_EMAIL too (the first operator's email)",
    });
  }
  if (e.DATABASE_DIRECT_URL && !e.DATABASE_URL) {
    ctx.addIssue({
      code: "custom",
      path: ["DATABASE_DIRECT_URL"],
      message: "needs DATABASE_URL too (it is the direct connection to the same database, for migrations)",
    });
  }
});

export type Config = {
  port: number;
  host: string;
  /** The issuer: the service's public URL without a trailing slash. */
  publicUrl: string;
  databaseUrl?: string;
  databasePoolSize: number;
  /**
   * A statement outside a transaction joins the connection that took the statement before while that one has
   * fewer than this many in flight (0: every statement takes an idle connection when there is one).
   */
  databasePipelineDepth: number;
  /** The pool's `application_name`: how `pg_stat_activity` (and a pooler's SHOW CLIENTS) names its connections. */
  databaseApplicationName: string;
  /**
   * What sits between the service and PostgreSQL: `transaction` (PgBouncer's transaction mode and the like:
   * no prepared statements, nothing kept in a session), or `none`/`session` (a connection is ours while open).
   */
  databasePooler: "none" | "session" | "transaction";
  /** A direct connection to the same database for migrations and bootstrap, bypassing a pooler. */
  databaseDirectUrl?: string;
  /** How long a start keeps trying to reach an unreachable database before it gives up. */
  databaseStartTimeout: number;
  /** Bounds on every wait for the database: DATABASE_STATEMENT_TIMEOUT and DATABASE_QUEUE_TIMEOUT (seconds). */
  databaseDeadlines: Deadlines;
  dataDir: string;
  /** Where the embedded database's initialised cluster is cached per PGlite version (db/seed.ts). */
  embeddedCacheDir?: string;
  bootstrapAdminSecret?: string;
  /** The first operator of the console: created in the system project when no user has this email. */
  bootstrapAdminEmail?: string;
  bootstrapAdminPassword?: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  /** A login session ends this long after the login, whatever its refreshes. */
  sessionMaxTtl: number;
  authCodeTtl: number;
  /** A single sign-on browser session ends this long after its last use… */
  ssoIdleTtl: number;
  /** …and this long after the login at most. */
  ssoTtl: number;
  /** The algorithm new signing keys use; changing it rotates to a key of the new algorithm. */
  signingAlg: "EdDSA" | "ES256" | "RS256";
  /** Days between automatic rotations of the signing key; 0: never. */
  signingKeyRotationDays: number;
  /** AES-256-GCM key that encrypts private signing keys at rest. */
  keyEncryptionKey?: Uint8Array;
  /** Audit events older than this many days are deleted. */
  auditRetentionDays: number;
  /** Days an expired grant on an object is kept (listed, named by `grant_expired`) before the purge. */
  grantRetentionDays: number;
  /** Webhooks may target loopback and private addresses (tests, on-premise receivers). */
  webhookAllowPrivateTargets: boolean;
  /** Seconds before a failed delivery's first retry; later retries scale with it (5 s … 8 h by default). */
  webhookRetryBaseSeconds: number;
  /** The SMTP server mails go through; undefined: mails are written to the log instead. */
  smtp?: SmtpTarget;
  /** The sender of every mail: an address, or `Name <address>`. */
  mailFrom: string;
  /** Seconds a password reset link works (PASSWORD_RESET_TTL, 30 minutes). */
  passwordResetTtl: number;
  /** Seconds an invitation link works (INVITATION_TTL, 7 days). */
  invitationTtl: number;
  /** Seconds an email verification link works (EMAIL_VERIFICATION_TTL, 1 day). */
  emailVerificationTtl: number;
  /** Seconds before a failed mail's first retry; later retries scale with it. */
  mailRetryBaseSeconds: number;
  /** debug adds each database statement's text and duration; info the request log; warn and error neither. */
  logLevel: LogLevel;
  /** JSON lines (json), or a short readable line per event for a terminal (pretty). */
  logFormat: LogFormat;
  /** How many reverse proxies in front append to X-Forwarded-For (0: use the connection's address). */
  trustProxyHops: number;
  /** /metrics on a port of its own (METRICS_PORT on METRICS_HOST, loopback by default); off when unset. */
  metricsListen?: { port: number; host: string };
  /** /metrics on the main port, for a bearer of this token (compared in constant time); off when unset. */
  metricsToken?: string;
  /** Traces exported over OTLP/HTTP (JSON) to this collector; off when unset. */
  tracing?: { endpoint: string; serviceName: string; headers: Record<string, string> };
};

/** `key=value,key=value` (OTEL_EXPORTER_OTLP_HEADERS), values percent-decoded as the OpenTelemetry spec says. */
function otlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at < 0) continue;
    const value = pair.slice(at + 1).trim();
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(value);
    } catch {
      out[pair.slice(0, at).trim()] = value; // not percent-encoded after all (a lone %): taken as written
    }
  }
  return out;
}

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
    databasePipelineDepth: e.DATABASE_PIPELINE_DEPTH,
    databaseApplicationName: e.DATABASE_APPLICATION_NAME,
    databasePooler: e.DATABASE_POOLER,
    databaseDirectUrl: e.DATABASE_DIRECT_URL,
    databaseStartTimeout: e.DATABASE_START_TIMEOUT,
    databaseDeadlines: { statement: e.DATABASE_STATEMENT_TIMEOUT, queue: e.DATABASE_QUEUE_TIMEOUT },
    dataDir: e.DATA_DIR,
    embeddedCacheDir: e.EMBEDDED_CACHE_DIR,
    bootstrapAdminSecret: e.BOOTSTRAP_ADMIN_SECRET,
    bootstrapAdminEmail: e.BOOTSTRAP_ADMIN_EMAIL,
    bootstrapAdminPassword: e.BOOTSTRAP_ADMIN_PASSWORD,
    accessTokenTtl: e.ACCESS_TOKEN_TTL,
    refreshTokenTtl: e.REFRESH_TOKEN_TTL,
    sessionMaxTtl: e.SESSION_MAX_TTL,
    authCodeTtl: e.AUTH_CODE_TTL,
    ssoIdleTtl: e.SSO_IDLE_TTL,
    ssoTtl: e.SSO_TTL,
    signingAlg: e.SIGNING_ALG,
    signingKeyRotationDays: e.SIGNING_KEY_ROTATION_DAYS,
    keyEncryptionKey: e.KEY_ENCRYPTION_KEY === undefined ? undefined : decodeBase64Url(e.KEY_ENCRYPTION_KEY),
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    grantRetentionDays: e.GRANT_RETENTION_DAYS,
    webhookAllowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS === "true",
    webhookRetryBaseSeconds: e.WEBHOOK_RETRY_BASE_SECONDS,
    smtp: e.SMTP_URL === undefined ? undefined : parseSmtpUrl(e.SMTP_URL),
    mailFrom: e.MAIL_FROM?.trim() ?? `no-reply@${new URL(publicUrl).hostname.replace(/^\[|\]$/g, "")}`,
    passwordResetTtl: e.PASSWORD_RESET_TTL,
    invitationTtl: e.INVITATION_TTL,
    emailVerificationTtl: e.EMAIL_VERIFICATION_TTL,
    mailRetryBaseSeconds: e.MAIL_RETRY_BASE_SECONDS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    trustProxyHops: e.TRUST_PROXY_HOPS,
    metricsListen: e.METRICS_PORT === undefined ? undefined : { port: e.METRICS_PORT, host: e.METRICS_HOST },
    metricsToken: e.METRICS_TOKEN,
    tracing: e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : {
      endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
      serviceName: e.OTEL_SERVICE_NAME,
      headers: otlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS),
    },
  };
}

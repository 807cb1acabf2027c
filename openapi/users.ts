/** A user of a project: fully managed (email and password) or identified by the calling system's external id. */
import { z } from "@hono/zod-openapi";
import {
  booleanFilter,
  ChangedProperties,
  ErrorCodeSchema,
  Id,
  listQuery,
  Name,
  NewProperties,
  ProjectIdParam,
  Properties,
  Timestamps,
} from "./fields.ts";
import { FreshProofFields } from "./mfa.ts";

/**
 * The schemes an imported password hash may be in, as `password_hash_algorithm` names them (`argon2` covers
 * argon2id and argon2i of other parameters than the service's); domain/accounts/password_schemes.ts reads them.
 */
export const IMPORT_ALGORITHMS = [
  "bcrypt",
  "argon2",
  "scrypt",
  "pbkdf2",
  "django_pbkdf2",
  "firebase_scrypt",
  "sha256_salted",
  "sha512_salted",
  "md5_salted",
] as const;
/** What `users.password_scheme` shows: the service's own `argon2id`, or an imported scheme until the rehash. */
export const PASSWORD_SCHEMES = ["argon2id", ...IMPORT_ALGORITHMS] as const;

export const User = z.object({
  id: z.string(),
  project_id: z.string(),
  display_name: z.string(),
  given_name: z.string().nullable().openapi({
    description: "The given (first) name, as SCIM's `name.givenName`",
  }),
  family_name: z.string().nullable().openapi({
    description: "The family (last) name, as SCIM's `name.familyName`",
  }),
  avatar_url: z.string().nullable(),
  external_user_id: z.string().nullable(),
  email: z.string().nullable().openapi({ description: "Stored trimmed and lower-cased" }),
  email_verified: z.boolean().openapi({
    description: "Whether the user proved they receive mail at `email` (followed a link mailed there: " +
      "verification, invitation or password reset), or an admin said so. A changed email is unverified.",
  }),
  pending_email: z.string().nullable().openapi({
    description: "A new address that replaces a verified `email` once it is verified itself (its link was " +
      "mailed to it); null when none waits",
  }),
  role_id: z.string().nullable(),
  is_active: z.boolean(),
  properties: Properties,
  password_scheme: z.enum([...PASSWORD_SCHEMES, "unknown"]).nullable().openapi({
    description:
      "The scheme of the user's password hash (never the hash): `argon2id` is the service's own; " +
      "the others were imported (POST …/users/import) and are rehashed to `argon2id` at the user's first " +
      "sign-in. null: the user has no password.",
  }),
  permissions: z.array(z.string()).optional().openapi({
    description:
      "Only with `include_permissions=true`: the sorted `resource:permission` codes of the user's role",
    example: ["orders:read", "orders:refund"],
  }),
  ...Timestamps,
}).openapi("User");
export type User = z.infer<typeof User>;

const isHttpUrl = (v: string) => {
  try {
    return ["http:", "https:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
};

/** "" means absent on create and "remove" on update; null likewise. */
const AvatarUrl = z.string().max(2048, "at most 2048 characters")
  .refine((v) => v === "" || isHttpUrl(v), "must be an http or https URL").nullable().optional()
  .openapi({ description: 'URL of an image. On update: omitted keeps it; null or "" removes it.' });
const ExternalUserId = z.string().max(100, "at most 100 characters")
  .refine((v) => v === "" || v.trim() !== "", "must not be blank").nullable().optional().openapi({
    description: "The calling system's id for the user; unique in the project (exact match). Required when " +
      'email is absent. On update: omitted keeps it; null or "" removes it.',
  });
const Email = z.string().trim().max(100, "at most 100 characters")
  .refine((v) => v === "" || z.regexes.email.test(v), "must be a valid email").nullable().optional().openapi({
    description:
      'Unique in the project, case-insensitively. On update: omitted keeps it; null or "" removes it. A ' +
      "new address replaces a verified one only once it is verified too (it waits in `pending_email`); an " +
      "unverified one is replaced at once. The new address is mailed a verification link, the old one a notice.",
  });
const NamePart = (which: string, scim: string) =>
  z.string().trim().max(100, "at most 100 characters").nullable().optional().openapi({
    description:
      `The ${which} name (SCIM's \`name.${scim}\`). On update: omitted keeps it; null or "" removes it.`,
  });
const GivenName = NamePart("given (first)", "givenName");
const FamilyName = NamePart("family (last)", "familyName");
const RoleId = z.string().max(100).nullable().optional().openapi({
  description: "A project role of this project (an organization role is 400 `invalid_params`). On update: " +
    'omitted keeps it; null or "" removes it.',
});

export const CreateUserRequest = z.strictObject({
  display_name: Name,
  given_name: GivenName,
  family_name: FamilyName,
  avatar_url: AvatarUrl,
  external_user_id: ExternalUserId,
  email: Email,
  password: z.string().min(8, "at least 8 characters").max(1024, "at most 1024 characters").nullable()
    .optional()
    .openapi({
      description: "At least 8 characters; required when email is given. Stored only as an argon2id hash.",
    }),
  role_id: RoleId,
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
  email_verified: z.boolean().optional().openapi({
    description: "Default false. true: the address is known to be the user's (e.g. imported from a system " +
      "that verified it)",
  }),
  send_invitation: z.boolean().optional().openapi({
    description: "true: mails the user an invitation to choose their password (`email` required, no " +
      "`password`); the link works once, for INVITATION_TTL (7 days), and following it verifies the address",
  }),
  send_verification: z.boolean().optional().openapi({
    description: "true: mails the user a link that verifies their address (`email` required)",
  }),
  properties: NewProperties,
}).superRefine((u, ctx) => {
  if (!u.email && !u.external_user_id) {
    ctx.addIssue({ code: "custom", path: ["external_user_id"], message: "required when email is absent" });
  }
  if (u.email && !u.password && !u.send_invitation) {
    ctx.addIssue({
      code: "custom",
      path: ["password"],
      message: "required when email is given, unless send_invitation is true",
    });
  }
  if (u.send_invitation && !u.email) {
    ctx.addIssue({ code: "custom", path: ["send_invitation"], message: "needs an email" });
  }
  if (u.send_invitation && u.password) {
    ctx.addIssue({ code: "custom", path: ["send_invitation"], message: "is for a user without a password" });
  }
  for (const field of ["send_invitation", "send_verification"] as const) {
    if (u[field] && u.is_active === false) {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: "is for an active user (no mail goes to an inactive one)",
      });
    }
  }
  if (u.send_verification && !u.email) {
    ctx.addIssue({ code: "custom", path: ["send_verification"], message: "needs an email" });
  }
}).openapi("CreateUserRequest");
export type CreateUserRequest = z.infer<typeof CreateUserRequest>;

export const UpdateUserRequest = z.strictObject({
  display_name: Name,
  given_name: GivenName,
  family_name: FamilyName,
  is_active: z.boolean().openapi({
    description: "false deactivates the user and ends their sessions at once",
  }),
  avatar_url: AvatarUrl,
  external_user_id: ExternalUserId,
  email: Email,
  password: z.string().max(1024, "at most 1024 characters")
    .refine((v) => v === "" || v.length >= 8, "at least 8 characters").nullable().optional()
    .openapi({
      description: "Empty or omitted keeps the current password; a new one ends the user's sessions.",
    }),
  role_id: RoleId,
  email_verified: z.boolean().optional().openapi({
    description: "Omitted keeps it, except that a changed email is unverified; true or false sets it",
  }),
  properties: ChangedProperties,
}).superRefine((u, ctx) => {
  if (!u.email && !u.external_user_id) {
    ctx.addIssue({
      code: "custom",
      path: ["external_user_id"],
      message: "required when email is not provided",
    });
  }
}).openapi("UpdateUserRequest");
export type UpdateUserRequest = z.infer<typeof UpdateUserRequest>;

export const UserIdParam = ProjectIdParam.extend({
  user_id: Id.openapi({ param: { name: "user_id", in: "path" } }),
});

export const UserListQuery = listQuery(
  ["display_name", "email", "external_user_id", "is_active", "created_at", "updated_at"] as const,
).extend({
  is_active: booleanFilter("Only active (true) or inactive (false) users"),
  role_id: z.string().max(100).optional().openapi({ description: "Only users with this role" }),
});
export type UserListQuery = z.infer<typeof UserListQuery>;

export const ExternalUserParams = ProjectIdParam.extend({
  // Any string: one that no user can have (too long, say) is simply not found.
  external_user_id: z.string().min(1).max(4096).openapi({
    param: { name: "external_user_id", in: "path" },
  }),
});

export const ExternalUserQuery = z.object({
  include_permissions: booleanFilter("Include `permissions` (default false)"),
});

export const CurrentUser = User.extend({
  permissions: z.array(z.string()).openapi({
    description: "The user's `resource:permission` codes, evaluated now",
  }),
}).openapi("CurrentUser");
export type CurrentUser = z.infer<typeof CurrentUser>;

export const UpdateCurrentUserRequest = z.strictObject({
  display_name: Name,
  email: z.string().trim().max(100, "at most 100 characters").refine(
    (v) => z.regexes.email.test(v),
    "must be a valid email",
  )
    .openapi({ description: "Required; unique in the project, case-insensitively" }),
  avatar_url: AvatarUrl,
  password: z.string().max(1024, "at most 1024 characters")
    .refine((v) => v === "" || v.length >= 8, "at least 8 characters").nullable().optional()
    .openapi({
      description: "Empty or omitted keeps the current password; a new one ends the user's other sessions.",
    }),
  ...FreshProofFields,
}).openapi("UpdateCurrentUserRequest", {
  description:
    "A new `password` or another `email` needs fresh proof: `current_password` when the user has " +
    "one, else `code` (a token alone cannot take the account over)",
});
export type UpdateCurrentUserRequest = z.infer<typeof UpdateCurrentUserRequest>;

export const MailSent = z.object({
  email: z.string().openapi({ description: "The address the mail goes to" }),
  expires_at: z.string().openapi({ description: "When the link in it stops working (RFC 3339)" }),
}).openapi("MailSent");
export type MailSent = z.infer<typeof MailSent>;

/** The hash schemes an import names with `password_hash_algorithm` (domain/accounts/password_schemes.ts). */
const ImportAlgorithm = z.enum(IMPORT_ALGORITHMS);

/** Fields an export writes that an import takes back and ignores (the new project makes its own). */
const ExportedOnly = (what: string) =>
  z.string().max(200).nullable().optional().openapi({
    description: `Ignored (${what}, as an export writes it)`,
  });

export const ImportUserLine = z.strictObject({
  email: Email.openapi({
    description: "Unique in the project, case-insensitively; required when `external_user_id` is absent",
  }),
  email_verified: z.boolean().optional().openapi({
    description: "Default false. true: the old system verified the address",
  }),
  display_name: Name.optional().openapi({
    description: "Default: `given_name` and `family_name`, else the email, else the external id (cut to 50)",
  }),
  given_name: GivenName,
  family_name: FamilyName,
  external_user_id: ExternalUserId.openapi({
    description: "The calling system's id for the user; unique in the project. Required when email is absent",
  }),
  avatar_url: AvatarUrl,
  role_id: RoleId.openapi({
    description:
      "A project role of this project; the caller must hold every permission of it (403 on the line)",
  }),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
  properties: NewProperties,
  password_hash: z.string().min(1, "must not be empty").max(2048, "at most 2048 characters").nullable()
    .optional().openapi({
      description: "The hash the old system stored, kept until the user's first sign-in rehashes it: a PHC " +
        "string (`$argon2id$`, `$argon2i$`, `$scrypt$`, `$pbkdf2-sha256$`), bcrypt's `$2a$`/`$2b$`/`$2y$`, " +
        "Django's `pbkdf2_sha256$…`, a string this service exported, or a bare digest (hex or base64) with " +
        "`password_hash_algorithm`. Needs `email`. Never a plain password.",
      example: "$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
    }),
  password_hash_algorithm: ImportAlgorithm.nullable().optional().openapi({
    description: "Required when `password_hash` does not name its scheme (`firebase_scrypt` and the salted " +
      "digests); when given for a string that names one, it must agree",
  }),
  password_salt: z.string().max(1024, "at most 1024 characters").nullable().optional().openapi({
    description:
      "For `firebase_scrypt`: the user's salt, base64 (the export's `salt`). For the salted digests: " +
      "the salt as the text that was joined to the password",
  }),
  password_salt_position: z.enum(["prefix", "suffix"]).nullable().optional().openapi({
    description: "For the salted digests: `prefix` hashed salt + password, `suffix` password + salt",
  }),
  id: ExportedOnly("the user's id in the exporting project"),
  project_id: ExportedOnly("the exporting project"),
  pending_email: ExportedOnly("an address waiting for verification"),
  password_scheme: ExportedOnly("read from `password_hash`"),
  created_at: ExportedOnly("the time the user was created there"),
  updated_at: ExportedOnly("the time the user last changed there"),
}).superRefine((u, ctx) => {
  if (!u.email && !u.external_user_id) {
    ctx.addIssue({ code: "custom", path: ["external_user_id"], message: "required when email is absent" });
  }
  if (u.password_hash && !u.email) {
    ctx.addIssue({ code: "custom", path: ["password_hash"], message: "needs an email to sign in with" });
  }
  for (const field of ["password_hash_algorithm", "password_salt", "password_salt_position"] as const) {
    if (u[field] != null && !u.password_hash) {
      ctx.addIssue({ code: "custom", path: [field], message: "is only used with password_hash" });
    }
  }
}).openapi("ImportUserLine", {
  description:
    "One user to import: an element of the JSON array, or one line of JSON lines. Unknown fields " +
    "refuse the line. The fields an export writes and an import cannot keep (`id`, `project_id`, " +
    "`pending_email`, `password_scheme`, `created_at`, `updated_at`) are accepted and ignored, so that an " +
    "export imports back as it is.",
});
export type ImportUserLine = z.infer<typeof ImportUserLine>;

export const FirebaseHashParameters = z.strictObject({
  signer_key: z.string().min(1).max(1024).openapi({
    description: "`base64_signer_key`, as the console shows it",
  }),
  salt_separator: z.string().max(1024).openapi({ description: "`base64_salt_separator` (may be empty)" }),
  rounds: z.number().int().min(1).max(32).openapi({ description: "`rounds` (scrypt's r), usually 8" }),
  mem_cost: z.number().int().min(1).max(20).openapi({
    description: "`mem_cost` (scrypt's N = 2^mem_cost), usually 14",
  }),
}).openapi("FirebaseHashParameters", {
  description: "The Firebase project's password hash parameters (Authentication → Users → Password hash " +
    "parameters), for the lines whose `password_hash_algorithm` is `firebase_scrypt`",
});
export type FirebaseHashParameters = z.infer<typeof FirebaseHashParameters>;

/** At most this many users in one import request. */
export const IMPORT_MAX_USERS = 10_000;

export const ImportUsersRequest = z.union([
  z.array(ImportUserLine).max(IMPORT_MAX_USERS),
  z.strictObject({
    users: z.array(ImportUserLine).max(IMPORT_MAX_USERS),
    firebase: FirebaseHashParameters.optional(),
  }),
]).openapi("ImportUsersRequest", {
  description: "A JSON array of users, or an object with `users` and the `firebase` hash parameters",
});

export const ImportLineError = z.object({
  code: ErrorCodeSchema,
  description: z.string().openapi({ description: "Why the line was refused, in words" }),
  details: z.array(z.object({ field: z.string(), issue: z.string() })).optional().openapi({
    description: "For `invalid_params`: each field of the line at fault",
  }),
}).openapi("ImportLineError");

export const ImportLineResult = z.object({
  line: z.number().int().openapi({
    description: "The user's position: its 1-based index in a JSON array, or its line number in JSON lines",
  }),
  status: z.enum(["created", "refused"]),
  user_id: z.string().optional().openapi({ description: "The new user's id, when created" }),
  error: ImportLineError.optional().openapi({ description: "Why, when refused" }),
}).openapi("ImportLineResult");
export type ImportLineResult = z.infer<typeof ImportLineResult>;

export const ImportUsersResult = z.object({
  results: z.array(ImportLineResult).openapi({ description: "One per user, in the order sent" }),
  created: z.number().int(),
  refused: z.number().int(),
}).openapi("ImportUsersResult");
export type ImportUsersResult = z.infer<typeof ImportUsersResult>;

export const ExportUsersQuery = z.object({
  include_password_hashes: booleanFilter(
    "true: each line carries `password_hash` (needs `users:export_secrets`; recorded as an audit event)",
  ),
});

export const ExportedUser = User.omit({ permissions: true }).extend({
  password_hash: z.string().optional().openapi({
    description:
      "Only with `include_password_hashes=true`, for a user with a password: the stored hash, in a " +
      "form `POST …/users/import` takes back",
  }),
}).openapi("ExportedUser", { description: "One line of an export: the user as the API shows them" });
export type ExportedUser = z.infer<typeof ExportedUser>;

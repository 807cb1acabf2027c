/**
 * Password hashes made by other systems, kept until the user's first sign-in rehashes them to the service's own
 * argon2id (docs/provisioning.md, "Importing users"). Three jobs: `importHash` turns what an import line gives
 * (a PHC, modular-crypt or Django string, or a bare digest with its scheme and salt) into one self-describing
 * stored string, or refuses it with a reason; `verifyForeign` checks a password against a stored string of any
 * scheme but Argon2 (passwords.ts runs Argon2, native or WebAssembly); `needsRehash` says whether a stored string
 * is anything but the service's own.
 *
 * The stored prefixes are read by SQL too: `users.password_scheme` is a generated column
 * (db/migrations/0035_provisioning.sql) that classifies them, so `schemeOf` and that column must agree.
 *
 * Every parameter is bounded, at import and again at each verification, so that no stored string can make a
 * sign-in cost more than about a second of CPU or 64 MiB of memory (`BOUNDS`), and strings that cannot be real
 * (an empty salt, a hash shorter than 16 bytes) are refused. Digests are compared in constant time. How many
 * such verifications run at once is bounded too (hash_gate.ts, applied by passwords.ts).
 *
 * bcrypt runs in the native @node-rs/bcrypt (off the event loop) where native addons load, as Argon2 does in
 * passwords.ts; elsewhere (Deno Deploy, or without --allow-ffi) in the pure-JavaScript bcryptjs, on the event
 * loop (cost 13 is about 0.6 s there).
 */
import { Buffer } from "node:buffer";
import { createCipheriv, createHash, pbkdf2, scrypt, timingSafeEqual } from "node:crypto";
import bcryptjs from "bcryptjs";
import { IMPORT_ALGORITHMS, PASSWORD_SCHEMES } from "../../openapi/users.ts";

/** The service's own Argon2id parameters (OWASP's: 19 MiB, 2 passes, 1 lane, 32-byte hash). */
export const ARGON2 = { memoryKiB: 19_456, passes: 2, lanes: 1, hashLength: 32 } as const;

/** The prefix of a hash in the service's own scheme: any other needs a rehash at the next sign-in. */
export const OWN_PREFIX = `$argon2id$v=19$m=${ARGON2.memoryKiB},t=${ARGON2.passes},p=${ARGON2.lanes}$`;

/** What `users.password_scheme` shows (db/migrations/0035_provisioning.sql reads the same prefixes). */
export const SCHEMES = PASSWORD_SCHEMES;
export type Scheme = (typeof SCHEMES)[number];

/** What an import line's `password_hash_algorithm` may name (`argon2` covers argon2id and argon2i). */
export { IMPORT_ALGORITHMS };
export type ImportAlgorithm = (typeof IMPORT_ALGORITHMS)[number];

/**
 * The limits on every scheme's parameters, so that one verification costs at most about a second of CPU and
 * 64 MiB of memory. Above them a single sign-in would be a denial of service; below them the string cannot be a
 * real hash.
 * - bcrypt: cost 4 to 13 (13 is about 0.6 s; each step doubles it, so 14 is refused).
 * - Argon2: m ≤ 65,536 KiB (64 MiB) and m·t ≤ 262,144 KiB (PHP's default, 64 MiB × 4 passes, fits; libsodium's
 *   "moderate", 256 MiB, does not: such users reset their password).
 * - scrypt (and Firebase's): 128·N·r bytes ≤ 64 MiB and N·r·p ≤ 2^20.
 * - PBKDF2: at most 2,000,000 iterations; only the first block of the hash (the digest's size) is derived and
 *   compared, so that a long stored hash does not multiply the cost (`pbkdf2Async`).
 */
export const BOUNDS = {
  bcrypt: { minCost: 4, maxCost: 13 },
  argon2: {
    maxMemoryKiB: 65_536,
    maxWorkKiB: 262_144,
    maxPasses: 10,
    maxLanes: 16,
    minSalt: 8,
    minHash: 16,
    maxHash: 64,
  },
  scrypt: { maxMemoryBytes: 64 * 1024 * 1024, maxCost: 2 ** 20, maxLogN: 20, maxR: 32, maxP: 16 },
  pbkdf2: { maxIterations: 2_000_000 },
  /** Any salt: 1 to 1,024 bytes; any KDF's hash: 16 to 128 bytes. */
  salt: { min: 1, max: 1024 },
  hash: { min: 16, max: 128 },
} as const;

/** Which scheme a stored string is in: the same reading as the SQL column. */
export function schemeOf(stored: string | null): Scheme | "unknown" | null {
  if (stored === null) return null;
  if (stored.startsWith(OWN_PREFIX)) return "argon2id";
  if (stored.startsWith("$argon2")) return "argon2";
  if (/^\$2[aby]\$/.test(stored)) return "bcrypt";
  if (stored.startsWith("$scrypt$")) return "scrypt";
  if (stored.startsWith("$pbkdf2-")) return "pbkdf2";
  if (stored.startsWith("pbkdf2_")) return "django_pbkdf2";
  if (stored.startsWith("$firebase-scrypt$")) return "firebase_scrypt";
  if (stored.startsWith("$sha256-salted$")) return "sha256_salted";
  if (stored.startsWith("$sha512-salted$")) return "sha512_salted";
  if (stored.startsWith("$md5-salted$")) return "md5_salted";
  return "unknown";
}

/** Whether a stored hash is not the service's own argon2id, so that a successful sign-in rehashes it. */
export function needsRehash(stored: string): boolean {
  return !stored.startsWith(OWN_PREFIX);
}

// ---------------------------------------------------------------------------------------------------------------
// Encodings

/**
 * Base64 in any of the flavours hash strings use: standard (PHC, Django, Firebase), URL-safe, and passlib's
 * "adapted" base64 (`.` for `+`), padded or not. Null for anything else.
 */
export function decodeAnyBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/\-_.]*={0,2}$/.test(text)) return null;
  const bare = text.replace(/=+$/, "");
  if (bare.length % 4 === 1) return null;
  if (text.includes("=") && text.length % 4 !== 0) return null;
  const standard = bare.replace(/[-.]/g, "+").replace(/_/g, "/");
  const bytes = new Uint8Array(Buffer.from(standard, "base64"));
  // Buffer ignores stray bits; a string that does not encode its bytes exactly is not one we read.
  return Buffer.from(bytes).toString("base64").replace(/=+$/, "") === standard ? bytes : null;
}

/** Standard base64 without padding, as PHC strings write it. */
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64").replace(/=+$/, "");

const DIGESTS = { sha256_salted: "sha256", sha512_salted: "sha512", md5_salted: "md5" } as const;
const DIGEST_LENGTH = { sha256: 32, sha512: 64, md5: 16 } as const;
const SALTED_PREFIX = {
  sha256_salted: "$sha256-salted$",
  sha512_salted: "$sha512-salted$",
  md5_salted: "$md5-salted$",
} as const;
type SaltedScheme = keyof typeof DIGESTS;

/** A digest given as hex (either case) or base64 of exactly `length` bytes. */
function decodeDigest(text: string, length: number): Uint8Array | null {
  if (text.length === length * 2 && /^[0-9a-fA-F]+$/.test(text)) {
    return new Uint8Array(Buffer.from(text, "hex"));
  }
  const bytes = decodeAnyBase64(text);
  return bytes && bytes.length === length ? bytes : null;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsers: each reads a stored string, checks its bounds, and answers its parameters or a reason.

type Parsed<T> = T | string;
const isReason = (p: unknown): p is string => typeof p === "string";

export type Argon2Hash = {
  type: "argon2id" | "argon2i";
  memoryKiB: number;
  passes: number;
  lanes: number;
  salt: Uint8Array;
  hash: Uint8Array;
};

const int = (s: string) => /^[0-9]{1,10}$/.test(s) ? Number(s) : NaN;

/** `$argon2id$v=19$m=…,t=…,p=…$salt$hash` or `$argon2i$…` (PHC, unpadded standard base64), within BOUNDS. */
export function parseArgon2(stored: string): Parsed<Argon2Hash> {
  const m = /^\$(argon2id|argon2i|argon2d)\$(?:v=(\d+)\$)?m=(\d+),t=(\d+),p=(\d+)\$([^$]*)\$([^$]*)$/.exec(
    stored,
  );
  if (!m) return "is not an Argon2 PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash)";
  if (m[1] === "argon2d") return "argon2d is not a password hashing variant: only argon2id and argon2i";
  if (m[2] !== "19") return "only Argon2 version 19 (v=19) is read";
  const [memoryKiB, passes, lanes] = [int(m[3]), int(m[4]), int(m[5])];
  const b = BOUNDS.argon2;
  if (!(lanes >= 1 && lanes <= b.maxLanes)) return `p (lanes) must be 1 to ${b.maxLanes}`;
  if (!(memoryKiB >= 8 * lanes && memoryKiB <= b.maxMemoryKiB)) {
    return `m (memory, KiB) must be 8·p to ${b.maxMemoryKiB}`;
  }
  if (!(passes >= 1 && passes <= b.maxPasses)) return `t (passes) must be 1 to ${b.maxPasses}`;
  if (memoryKiB * passes > b.maxWorkKiB) {
    return `m·t (memory times passes) must be at most ${b.maxWorkKiB.toLocaleString("en")} KiB`;
  }
  const salt = decodeAnyBase64(m[6]);
  const hash = decodeAnyBase64(m[7]);
  if (!salt || salt.length < b.minSalt || salt.length > BOUNDS.salt.max) {
    return `the salt must be base64 of ${b.minSalt} to ${BOUNDS.salt.max} bytes`;
  }
  if (!hash || hash.length < b.minHash || hash.length > b.maxHash) {
    return `the hash must be base64 of ${b.minHash} to ${b.maxHash} bytes`;
  }
  return { type: m[1] as Argon2Hash["type"], memoryKiB, passes, lanes, salt, hash };
}

/**
 * The canonical PHC string of an Argon2 hash: unpadded standard base64, as the native addon (which re-reads the
 * string itself) and the SQL column expect. An import may give padded or URL-safe base64, which parseArgon2
 * reads; it is stored, and verified, re-encoded.
 */
export function argon2String(h: Argon2Hash): string {
  return `$${h.type}$v=19$m=${h.memoryKiB},t=${h.passes},p=${h.lanes}$${b64(h.salt)}$${b64(h.hash)}`;
}

/** `$2a$`, `$2b$` or `$2y$`, a two-digit cost within BOUNDS, and 53 characters of bcrypt's base64. */
function parseBcrypt(stored: string): Parsed<{ cost: number }> {
  const m = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/.exec(stored);
  if (!m) return "is not a bcrypt string ($2b$<cost>$ and 53 characters)";
  const cost = Number(m[1]);
  const { minCost, maxCost } = BOUNDS.bcrypt;
  if (cost < minCost || cost > maxCost) return `the bcrypt cost must be ${minCost} to ${maxCost}`;
  return { cost };
}

type ScryptParams = { N: number; r: number; p: number };

function scryptIssue({ N, r, p }: ScryptParams): string | null {
  const b = BOUNDS.scrypt;
  if (!(r >= 1 && r <= b.maxR)) return `r must be 1 to ${b.maxR}`;
  if (!(p >= 1 && p <= b.maxP)) return `p must be 1 to ${b.maxP}`;
  if (128 * N * r > b.maxMemoryBytes) return "needs more than 64 MiB of memory (128·N·r bytes)";
  if (N * r * p > b.maxCost) return `costs too much: N·r·p must be at most ${b.maxCost}`;
  return null;
}

type ScryptHash = ScryptParams & { salt: Uint8Array; hash: Uint8Array };

/** passlib's `$scrypt$ln=…,r=…,p=…$salt$hash` (N = 2^ln; base64 standard or adapted, padded or not). */
function parseScrypt(stored: string): Parsed<ScryptHash> {
  const m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([^$]*)\$([^$]*)$/.exec(stored);
  if (!m) return "is not a scrypt PHC string ($scrypt$ln=…,r=…,p=…$salt$hash)";
  const ln = int(m[1]);
  if (!(ln >= 1 && ln <= BOUNDS.scrypt.maxLogN)) return `ln must be 1 to ${BOUNDS.scrypt.maxLogN}`;
  const params = { N: 2 ** ln, r: int(m[2]), p: int(m[3]) };
  const issue = scryptIssue(params);
  if (issue) return issue;
  const salt = saltOf(m[4]);
  if (isReason(salt)) return salt;
  const hash = hashOf(m[5]);
  if (isReason(hash)) return hash;
  return { ...params, salt, hash };
}

const saltOf = (text: string): Parsed<Uint8Array> => {
  const salt = decodeAnyBase64(text);
  return salt && salt.length >= BOUNDS.salt.min && salt.length <= BOUNDS.salt.max
    ? salt
    : `the salt must be base64 of ${BOUNDS.salt.min} to ${BOUNDS.salt.max} bytes`;
};
const hashOf = (text: string): Parsed<Uint8Array> => {
  const hash = decodeAnyBase64(text);
  return hash && hash.length >= BOUNDS.hash.min && hash.length <= BOUNDS.hash.max
    ? hash
    : `the hash must be base64 of ${BOUNDS.hash.min} to ${BOUNDS.hash.max} bytes`;
};

type Pbkdf2Digest = "sha1" | "sha256" | "sha512";
type Pbkdf2Hash = { digest: Pbkdf2Digest; iterations: number; salt: Uint8Array; hash: Uint8Array };

function iterationsIssue(iterations: number): string | null {
  const max = BOUNDS.pbkdf2.maxIterations;
  return iterations >= 1 && iterations <= max
    ? null
    : `the iterations must be 1 to ${max.toLocaleString("en")}`;
}

/**
 * PBKDF2 as PHC-like strings: passlib's `$pbkdf2-sha256$29000$salt$hash` (adapted base64), its SHA-1
 * `$pbkdf2$…` (stored as `$pbkdf2-sha1$…`), and @phc/pbkdf2's `$pbkdf2-sha256$i=…[,l=…]$salt$hash`. The salt is
 * the decoded bytes (as passlib and @phc use them); the hash's length is the derived key's.
 */
function parsePbkdf2(stored: string): Parsed<Pbkdf2Hash> {
  const m = /^\$pbkdf2(?:-(sha1|sha256|sha512))?\$(?:(\d+)|i=(\d+)(?:,l=(\d+))?)\$([^$]*)\$([^$]*)$/.exec(
    stored,
  );
  if (!m) return "is not a PBKDF2 string ($pbkdf2-sha256$<iterations>$salt$hash)";
  const iterations = int(m[2] ?? m[3]);
  const issue = iterationsIssue(iterations);
  if (issue) return issue;
  const salt = saltOf(m[5]);
  if (isReason(salt)) return salt;
  const hash = hashOf(m[6]);
  if (isReason(hash)) return hash;
  if (m[4] !== undefined && int(m[4]) !== hash.length) return "l (the hash's length) does not match the hash";
  return { digest: (m[1] ?? "sha1") as Pbkdf2Digest, iterations, salt, hash };
}

/** Django's `pbkdf2_sha256$<iterations>$<salt>$<base64 hash>` (and `pbkdf2_sha1`): the salt is used as text. */
function parseDjango(stored: string): Parsed<Pbkdf2Hash> {
  const m = /^pbkdf2_(sha1|sha256)\$(\d+)\$([^$]*)\$([^$]*)$/.exec(stored);
  if (!m) return "is not a Django PBKDF2 string (pbkdf2_sha256$<iterations>$<salt>$<hash>)";
  const iterations = int(m[2]);
  const issue = iterationsIssue(iterations);
  if (issue) return issue;
  const salt = new TextEncoder().encode(m[3]);
  if (salt.length < BOUNDS.salt.min || salt.length > BOUNDS.salt.max) {
    return `the salt must be ${BOUNDS.salt.min} to ${BOUNDS.salt.max} bytes`;
  }
  const hash = hashOf(m[4]);
  if (isReason(hash)) return hash;
  return { digest: m[1] as Pbkdf2Digest, iterations, salt, hash };
}

type FirebaseHash = {
  rounds: number;
  memCost: number;
  salt: Uint8Array;
  separator: Uint8Array;
  signerKey: Uint8Array;
  hash: Uint8Array;
};

function firebaseIssue(rounds: number, memCost: number): string | null {
  if (!(memCost >= 1 && memCost <= BOUNDS.scrypt.maxLogN)) {
    return `mem_cost must be 1 to ${BOUNDS.scrypt.maxLogN}`;
  }
  return scryptIssue({ N: 2 ** memCost, r: rounds, p: 1 });
}

/**
 * The service's own encoding of a Firebase hash with everything that verifies it:
 * `$firebase-scrypt$r=<rounds>,m=<mem_cost>$<salt>$<salt separator>$<signer key>$<hash>` (unpadded base64; the
 * separator may be empty).
 */
function parseFirebase(stored: string): Parsed<FirebaseHash> {
  const m = /^\$firebase-scrypt\$r=(\d+),m=(\d+)\$([^$]*)\$([^$]*)\$([^$]*)\$([^$]*)$/.exec(stored);
  if (!m) return "is not a stored Firebase scrypt string ($firebase-scrypt$r=…,m=…$salt$separator$key$hash)";
  const [rounds, memCost] = [int(m[1]), int(m[2])];
  const issue = firebaseIssue(rounds, memCost);
  if (issue) return issue;
  const salt = saltOf(m[3]);
  if (isReason(salt)) return salt;
  const separator = decodeAnyBase64(m[4]);
  if (!separator || separator.length > BOUNDS.salt.max) return "the salt separator must be base64";
  const signerKey = decodeAnyBase64(m[5]);
  if (!signerKey || signerKey.length < BOUNDS.hash.min || signerKey.length > BOUNDS.hash.max) {
    return `the signer key must be base64 of ${BOUNDS.hash.min} to ${BOUNDS.hash.max} bytes`;
  }
  const hash = decodeAnyBase64(m[6]);
  if (!hash || hash.length !== signerKey.length) return "the hash must be base64 as long as the signer key";
  return { rounds, memCost, salt, separator, signerKey, hash };
}

type SaltedHash = {
  digest: "sha256" | "sha512" | "md5";
  prefix: boolean;
  salt: Uint8Array;
  hash: Uint8Array;
};

/** `$sha256-salted$prefix|suffix$<salt>$<digest>` (and sha512, md5; unpadded base64). */
function parseSalted(stored: string, scheme: SaltedScheme): Parsed<SaltedHash> {
  const m = /^\$(sha256|sha512|md5)-salted\$(prefix|suffix)\$([^$]*)\$([^$]*)$/.exec(stored);
  if (!m || `${m[1]}_salted` !== scheme) {
    return `is not a stored salted digest (${SALTED_PREFIX[scheme]}prefix|suffix$salt$digest)`;
  }
  const digest = DIGESTS[scheme];
  const salt = saltOf(m[3]);
  if (isReason(salt)) return salt;
  const hash = decodeDigest(m[4], DIGEST_LENGTH[digest]);
  if (!hash) return `the digest must be ${DIGEST_LENGTH[digest]} bytes`;
  return { digest, prefix: m[2] === "prefix", salt, hash };
}

/** A stored string's parameters for its scheme, or the reason it cannot be verified. */
function parseStored(stored: string): Parsed<{ scheme: Scheme; parsed: unknown }> {
  const scheme = schemeOf(stored);
  const parsers: Record<Scheme, (s: string) => Parsed<unknown>> = {
    argon2id: parseArgon2,
    argon2: parseArgon2,
    bcrypt: parseBcrypt,
    scrypt: parseScrypt,
    pbkdf2: parsePbkdf2,
    django_pbkdf2: parseDjango,
    firebase_scrypt: parseFirebase,
    sha256_salted: (s) => parseSalted(s, "sha256_salted"),
    sha512_salted: (s) => parseSalted(s, "sha512_salted"),
    md5_salted: (s) => parseSalted(s, "md5_salted"),
  };
  if (scheme === null || scheme === "unknown") return "names no known scheme";
  const parsed = parsers[scheme](stored);
  return isReason(parsed) ? parsed : { scheme, parsed };
}

// ---------------------------------------------------------------------------------------------------------------
// Import

/** An import line's password fields. */
export type ForeignHash = {
  password_hash: string;
  password_hash_algorithm?: ImportAlgorithm | null;
  password_salt?: string | null;
  password_salt_position?: "prefix" | "suffix" | null;
};

/** The request's Firebase hash parameters (the console's "Password hash parameters"), base64 as shown there. */
export type FirebaseParams = { signer_key: string; salt_separator: string; rounds: number; mem_cost: number };

/** A refused hash: the field at fault and why. */
export type HashIssue = { field: string; issue: string };
export type ImportedHash = { stored: string; scheme: Scheme };

/**
 * The stored string for an imported hash, or why it is refused. A string that names its scheme (PHC, modular
 * crypt, Django, or one of this service's own encodings, as an export writes them) is kept as it is once its
 * parameters are within BOUNDS (passlib's SHA-1 `$pbkdf2$` becomes `$pbkdf2-sha1$`); `password_hash_algorithm`,
 * when given, must agree with it. A bare Firebase hash or salted digest needs its algorithm and salt (and the
 * request's `firebase` parameters, or the salt's position) and is encoded with them.
 */
export function importHash(input: ForeignHash, firebase?: FirebaseParams | null): ImportedHash | HashIssue {
  const text = input.password_hash.trim();
  const algorithm = input.password_hash_algorithm ?? null;
  const refuse = (issue: string, field = "password_hash"): HashIssue => ({ field, issue });
  const named = schemeOf(text.startsWith("$pbkdf2$") ? "$pbkdf2-sha1$" : text);
  if (named !== "unknown" && named !== null) {
    const generic = named === "argon2id" ? "argon2" : named;
    if (algorithm !== null && algorithm !== generic) {
      return refuse(`is a ${generic} string, not ${algorithm}`, "password_hash_algorithm");
    }
    for (const field of ["password_salt", "password_salt_position"] as const) {
      if (input[field] != null) {
        return refuse(`is not used with a ${generic} string, which holds its salt`, field);
      }
    }
    const stored = text.startsWith("$pbkdf2$") ? `$pbkdf2-sha1$${text.slice("$pbkdf2$".length)}` : text;
    const parsed = parseStored(stored);
    if (isReason(parsed)) return refuse(parsed);
    if (parsed.scheme === "argon2" || parsed.scheme === "argon2id") {
      // Stored re-encoded (padded or URL-safe base64 becomes PHC's unpadded standard base64).
      const canonical = argon2String(parsed.parsed as Argon2Hash);
      return { stored: canonical, scheme: schemeOf(canonical) as Scheme };
    }
    return { stored, scheme: parsed.scheme };
  }
  if (algorithm === null) {
    return refuse(
      "does not name its scheme: give password_hash_algorithm (a bare digest), or a PHC, modular-crypt or " +
        "Django string",
    );
  }
  if (algorithm === "firebase_scrypt") return importFirebase(text, input, firebase ?? null);
  if (algorithm in DIGESTS) return importSalted(text, input, algorithm as SaltedScheme);
  return refuse(`is not a ${algorithm} string`);
}

function importFirebase(
  text: string,
  input: ForeignHash,
  firebase: FirebaseParams | null,
): ImportedHash | HashIssue {
  if (!firebase) {
    return { field: "firebase", issue: "the request's firebase parameters are required for firebase_scrypt" };
  }
  if (input.password_salt_position != null) {
    return { field: "password_salt_position", issue: "is not used with firebase_scrypt" };
  }
  if (!input.password_salt) return { field: "password_salt", issue: "required for firebase_scrypt (base64)" };
  const salt = decodeAnyBase64(input.password_salt);
  if (!salt || salt.length === 0 || salt.length > BOUNDS.salt.max) {
    return { field: "password_salt", issue: `must be base64 of 1 to ${BOUNDS.salt.max} bytes` };
  }
  const hash = decodeAnyBase64(text);
  if (!hash) return { field: "password_hash", issue: "must be base64 (Firebase's passwordHash)" };
  const separator = decodeAnyBase64(firebase.salt_separator);
  const signerKey = decodeAnyBase64(firebase.signer_key);
  if (!separator || !signerKey) {
    return { field: "firebase", issue: "signer_key and salt_separator must be base64" };
  }
  if (hash.length !== signerKey.length) {
    return { field: "password_hash", issue: `must be ${signerKey.length} bytes, as long as the signer key` };
  }
  const stored =
    `$firebase-scrypt$r=${firebase.rounds},m=${firebase.mem_cost}$${b64(salt)}$${b64(separator)}$` +
    `${b64(signerKey)}$${b64(hash)}`;
  const parsed = parseFirebase(stored);
  if (isReason(parsed)) {
    return { field: /^the salt /.test(parsed) ? "password_salt" : "firebase", issue: parsed };
  }
  return { stored, scheme: "firebase_scrypt" };
}

function importSalted(text: string, input: ForeignHash, scheme: SaltedScheme): ImportedHash | HashIssue {
  const digest = DIGESTS[scheme];
  if (!input.password_salt) {
    return { field: "password_salt", issue: `required for ${scheme} (the text joined to the password)` };
  }
  if (!input.password_salt_position) {
    return {
      field: "password_salt_position",
      issue: `required for ${scheme}: prefix (salt then password) or suffix (password then salt)`,
    };
  }
  const salt = new TextEncoder().encode(input.password_salt);
  if (salt.length > BOUNDS.salt.max) {
    return { field: "password_salt", issue: `at most ${BOUNDS.salt.max} bytes` };
  }
  const hash = decodeDigest(text, DIGEST_LENGTH[digest]);
  if (!hash) {
    return {
      field: "password_hash",
      issue: `must be hex or base64 of ${DIGEST_LENGTH[digest]} bytes (${digest})`,
    };
  }
  return {
    stored: `${SALTED_PREFIX[scheme]}${input.password_salt_position}$${b64(salt)}$${b64(hash)}`,
    scheme,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Verification

const encoder = new TextEncoder();

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

function scryptAsync(
  password: Uint8Array,
  salt: Uint8Array,
  keylen: number,
  p: ScryptParams,
): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keylen, { ...p, maxmem: BOUNDS.scrypt.maxMemoryBytes * 2 }, (err, key) => {
      if (err) reject(err);
      else resolve(key);
    })
  );
}

const PBKDF2_BLOCK = { sha1: 20, sha256: 32, sha512: 64 } as const;

/**
 * The first min(hash length, digest size) bytes of the PBKDF2 key: the prefix of the stored hash to compare.
 * PBKDF2's output is T1 ‖ T2 ‖ …, where each block Ti = F(password, salt, iterations, i) is computed on its own
 * (RFC 8018 §5.2): T1 depends only on the password, the salt, the iterations and the block index 1, so the first
 * block is exactly what deriving the whole length would start with, and comparing it is as sound as comparing
 * the whole (a match of 20 to 64 bytes of an HMAC chain). Deriving more would multiply the cost by the number of
 * blocks for nothing: a 128-byte SHA-1 hash is 7 blocks.
 */
function pbkdf2Prefix(h: Pbkdf2Hash): Uint8Array {
  return h.hash.subarray(0, Math.min(h.hash.length, PBKDF2_BLOCK[h.digest]));
}

function pbkdf2Async(password: Uint8Array, h: Pbkdf2Hash): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    pbkdf2(password, h.salt, h.iterations, pbkdf2Prefix(h).length, h.digest, (err, key) => {
      if (err) reject(err);
      else resolve(key);
    })
  );
}

/** Firebase's scrypt: scrypt(password, salt ‖ separator, N = 2^mem_cost, r = rounds, p = 1) keys AES-256-CTR (zero
 * IV), which encrypts the signer key (github.com/firebase/scrypt, scryptenc.c). */
export async function firebaseScrypt(password: string, h: Omit<FirebaseHash, "hash">): Promise<Uint8Array> {
  const salt = Buffer.concat([h.salt, h.separator]);
  const derived = await scryptAsync(encoder.encode(password), salt, 64, {
    N: 2 ** h.memCost,
    r: h.rounds,
    p: 1,
  });
  const cipher = createCipheriv("aes-256-ctr", derived.subarray(0, 32), Buffer.alloc(16));
  return Buffer.concat([cipher.update(h.signerKey), cipher.final()]);
}

type Bcrypt = { name: "native" | "js"; compare(password: string, stored: string): Promise<boolean> };

let bcryptBackend: Promise<Bcrypt> | undefined;

async function loadBcrypt(): Promise<Bcrypt> {
  try {
    const native = await import("@node-rs/bcrypt");
    // Prove the addon works before relying on it.
    const probe = await native.hash("probe", 4);
    if (!(await native.compare("probe", probe)) || (await native.compare("wrong", probe))) {
      throw new Error("the native bcrypt does not work");
    }
    return { name: "native", compare: (p, s) => native.compare(p, s) };
  } catch {
    // The native addon does not load here (Deno Deploy, no --allow-ffi): bcryptjs computes the same.
    return { name: "js", compare: (p, s) => bcryptjs.compare(p, s) };
  }
}

function getBcrypt(): Promise<Bcrypt> {
  bcryptBackend ??= loadBcrypt();
  return bcryptBackend;
}

/** Which bcrypt runs: the native addon, off the event loop, or bcryptjs on it. */
export async function bcryptBackendName(): Promise<"native" | "js"> {
  return (await getBcrypt()).name;
}

/**
 * Whether the password matches a stored hash of any scheme but Argon2 (passwords.ts verifies those). A string
 * that does not parse, or whose parameters are out of BOUNDS, matches nothing.
 */
export async function verifyForeign(stored: string, password: string): Promise<boolean> {
  const read = parseStored(stored);
  if (isReason(read)) return false;
  const given = encoder.encode(password);
  switch (read.scheme) {
    case "bcrypt":
      // Both compare their own output in constant time, and read $2a$, $2b$ and $2y$ ($2b$ under PHP's name).
      return await (await getBcrypt()).compare(password, stored);
    case "scrypt": {
      const h = read.parsed as ScryptHash;
      return same(await scryptAsync(given, h.salt, h.hash.length, h), h.hash);
    }
    case "pbkdf2":
    case "django_pbkdf2": {
      const h = read.parsed as Pbkdf2Hash;
      return same(await pbkdf2Async(given, h), pbkdf2Prefix(h));
    }
    case "firebase_scrypt": {
      const h = read.parsed as FirebaseHash;
      return same(await firebaseScrypt(password, h), h.hash);
    }
    case "sha256_salted":
    case "sha512_salted":
    case "md5_salted": {
      const h = read.parsed as SaltedHash;
      const input = h.prefix ? Buffer.concat([h.salt, given]) : Buffer.concat([given, h.salt]);
      return same(createHash(h.digest).update(input).digest(), h.hash);
    }
    default:
      return false; // Argon2: passwords.ts
  }
}

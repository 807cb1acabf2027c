/**
 * Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), as PHC strings.
 * The native @node-rs/argon2 (about 13 ms, off the event loop) is used where native addons load; elsewhere
 * (Deno Deploy, or without --allow-ffi) hash-wasm computes the same hashes (about 40 ms, on the event loop).
 * Both read each other's hashes. `verifyPassword` also reads every imported scheme (password_schemes.ts): other
 * Argon2 parameters and argon2i here, the rest there.
 */
import { timingSafeEqual } from "node:crypto";
import {
  ARGON2,
  type Argon2Hash,
  argon2String,
  needsRehash,
  parseArgon2,
  verifyForeign,
} from "./password_schemes.ts";
import { FOREIGN_HASH_GATE } from "./hash_gate.ts";

export { ARGON2 };

type Backend = {
  name: "native" | "wasm";
  hash(password: string): Promise<string>;
  verify(phc: string, parsed: Argon2Hash, password: string): Promise<boolean>;
};

let backend: Promise<Backend> | undefined;

async function loadBackend(): Promise<Backend> {
  try {
    const native = await import("@node-rs/argon2");
    const opts = {
      memoryCost: ARGON2.memoryKiB,
      timeCost: ARGON2.passes,
      parallelism: ARGON2.lanes,
      outputLen: ARGON2.hashLength,
      algorithm: 2 as const,
    };
    // Prove the addon works before relying on it.
    await native.verify(await native.hash("probe", opts), "probe");
    // The addon reads the variant and parameters from the PHC string itself: given re-encoded (unpadded standard
    // base64), which it reads where it might not read a padded or URL-safe one.
    return {
      name: "native",
      hash: (p) => native.hash(p, opts),
      verify: (_, parsed, p) => native.verify(argon2String(parsed), p),
    };
  } catch {
    // The native addon does not load or work on this platform: the WebAssembly one computes the same hashes.
    const wasm = await import("hash-wasm");
    const compute = (password: string, parsed: Argon2Hash) =>
      (parsed.type === "argon2i" ? wasm.argon2i : wasm.argon2id)({
        password,
        salt: parsed.salt,
        memorySize: parsed.memoryKiB,
        iterations: parsed.passes,
        parallelism: parsed.lanes,
        hashLength: parsed.hash.length,
        outputType: "binary",
      });
    return {
      name: "wasm",
      hash: async (password) => {
        const salt = crypto.getRandomValues(new Uint8Array(16));
        return await wasm.argon2id({
          password,
          salt,
          memorySize: ARGON2.memoryKiB,
          iterations: ARGON2.passes,
          parallelism: ARGON2.lanes,
          hashLength: ARGON2.hashLength,
          outputType: "encoded",
        });
      },
      verify: async (_, parsed, password) => {
        const actual = await compute(password, parsed);
        return timingSafeEqual(actual, parsed.hash);
      },
    };
  }
}

function getBackend(): Promise<Backend> {
  backend ??= loadBackend();
  return backend;
}

export async function hashPassword(password: string): Promise<string> {
  return await (await getBackend()).hash(password);
}

/**
 * Whether the password matches the stored hash, of any scheme (the service's own, or an imported one). A stored
 * value that is no hash of a known scheme, or whose parameters are out of bounds, matches nothing. An imported
 * hash is verified under the process-wide FOREIGN_HASH_GATE: when it is full, this throws 429
 * `too_many_requests` (hash_gate.ts) rather than queue without bound.
 */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  if (needsRehash(stored)) return await FOREIGN_HASH_GATE.run(() => verifyAny(stored, password));
  return await verifyAny(stored, password);
}

async function verifyAny(stored: string, password: string): Promise<boolean> {
  try {
    if (!stored.startsWith("$argon2")) return await verifyForeign(stored, password);
    const parsed = parseArgon2(stored);
    if (typeof parsed === "string") return false;
    return await (await getBackend()).verify(stored, parsed, password);
  } catch {
    return false; // the libraries throw on a value they cannot read: it matches nothing
  }
}

export async function passwordBackend(): Promise<"native" | "wasm"> {
  return (await getBackend()).name;
}

/** The project's password rules for a password a user chooses: at least 8 characters, at most 1024. */
export const PASSWORD_LENGTH = { min: 8, max: 1024 } as const;

/** What is wrong with a password a user chooses, in words for its form, or null when it may be used. */
export function passwordIssue(password: string, email?: string | null): string | null {
  if (password.length < PASSWORD_LENGTH.min) return `Use at least ${PASSWORD_LENGTH.min} characters.`;
  if (password.length > PASSWORD_LENGTH.max) return `Use at most ${PASSWORD_LENGTH.max} characters.`;
  if (email && password.trim().toLowerCase() === email) {
    return "Do not use your email address as your password.";
  }
  return null;
}

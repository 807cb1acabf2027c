/**
 * Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), as PHC strings.
 * The native @node-rs/argon2 (about 13 ms, off the event loop) is used where native addons load; elsewhere
 * (Deno Deploy, or without --allow-ffi) hash-wasm computes the same hashes (about 40 ms, on the event loop).
 * Both read each other's hashes.
 */
import { timingSafeEqual } from "node:crypto";
import { decodeBase64Strict } from "../shared/base64.ts";

type Argon2Params = { memoryKiB: number; passes: number; lanes: number; hashLength: number };
export const ARGON2: Readonly<Argon2Params> = { memoryKiB: 19_456, passes: 2, lanes: 1, hashLength: 32 };

type Backend = {
  name: "native" | "wasm";
  hash(password: string): Promise<string>;
  verify(phc: string, password: string): Promise<boolean>;
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
    return { name: "native", hash: (p) => native.hash(p, opts), verify: (h, p) => native.verify(h, p) };
  } catch {
    // The native addon does not load or work on this platform: the WebAssembly one computes the same hashes.
    const wasm = await import("hash-wasm");
    const compute = (password: string, salt: Uint8Array, params: Argon2Params) =>
      wasm.argon2id({
        password,
        salt,
        memorySize: params.memoryKiB,
        iterations: params.passes,
        parallelism: params.lanes,
        hashLength: params.hashLength,
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
      verify: async (phc, password) => {
        const parsed = parsePhc(phc);
        if (!parsed) return false;
        const actual = await compute(password, parsed.salt, {
          ...ARGON2,
          ...parsed.params,
          hashLength: parsed.hash.length,
        });
        return timingSafeEqual(actual, parsed.hash);
      },
    };
  }
}

function getBackend(): Promise<Backend> {
  backend ??= loadBackend();
  return backend;
}

/** $argon2id$v=19$m=…,t=…,p=…$salt$hash (unpadded base64). */
function parsePhc(phc: string) {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(phc);
  if (!m) return null;
  const salt = decodeBase64Strict(m[4]);
  const hash = decodeBase64Strict(m[5]);
  if (!salt || !hash) return null;
  return {
    params: { memoryKiB: Number(m[1]), passes: Number(m[2]), lanes: Number(m[3]) },
    salt,
    hash,
  };
}

export async function hashPassword(password: string): Promise<string> {
  return await (await getBackend()).hash(password);
}

export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await (await getBackend()).verify(phc, password);
  } catch {
    return false; // the libraries throw on a stored value that is no Argon2id PHC string: it matches nothing
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

/**
 * The part of CBOR (RFC 8949) that WebAuthn uses: unsigned and negative integers, byte and text strings, arrays,
 * maps, booleans and null, definite lengths only. Each decode says where it stopped, so that a COSE key can be
 * cut out of authenticator data that goes on after it. A malformed input throws a plain Error, which the one
 * caller (webauthn.ts) turns into the WebAuthnError of what it was decoding.
 */
export type Cbor =
  | number
  | bigint
  | Uint8Array
  | string
  | Cbor[]
  | Map<Cbor, Cbor>
  | boolean
  | null
  | undefined;

export function decodeCbor(bytes: Uint8Array, offset = 0): { value: Cbor; end: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = offset;
  const need = (n: number) => {
    if (pos + n > bytes.length) throw new Error("CBOR: truncated");
  };
  const length = (info: number): number => {
    if (info < 24) return info;
    if (info === 24) return need(1), view.getUint8(pos++);
    if (info === 25) return need(2), pos += 2, view.getUint16(pos - 2);
    if (info === 26) return need(4), pos += 4, view.getUint32(pos - 4);
    if (info === 27) {
      need(8);
      pos += 8;
      const big = view.getBigUint64(pos - 8);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("CBOR: length too large");
      return Number(big);
    }
    throw new Error("CBOR: indefinite lengths are not supported");
  };
  const item = (depth: number): Cbor => {
    if (depth > 16) throw new Error("CBOR: nested too deeply");
    need(1);
    const first = view.getUint8(pos++);
    const major = first >> 5, info = first & 31;
    switch (major) {
      case 0:
        return length(info);
      case 1:
        return -1 - length(info);
      case 2: {
        const n = length(info);
        need(n);
        pos += n;
        return bytes.slice(pos - n, pos);
      }
      case 3: {
        const n = length(info);
        need(n);
        pos += n;
        return new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(pos - n, pos));
      }
      case 4: {
        const n = length(info);
        if (n > 1024) throw new Error("CBOR: array too long");
        return Array.from({ length: n }, () => item(depth + 1));
      }
      case 5: {
        const n = length(info);
        if (n > 1024) throw new Error("CBOR: map too long");
        const map = new Map<Cbor, Cbor>();
        for (let i = 0; i < n; i++) {
          const key = item(depth + 1);
          map.set(key, item(depth + 1));
        }
        return map;
      }
      case 7:
        if (info === 20) return false;
        if (info === 21) return true;
        if (info === 22) return null;
        if (info === 23) return undefined;
        throw new Error("CBOR: unsupported simple value");
      default:
        throw new Error("CBOR: tags are not supported");
    }
  };
  const value = item(0);
  return { value, end: pos };
}

/**
 * How much a configured secret (BOOTSTRAP_ADMIN_SECRET) can be trusted to be random: a conservative estimate of
 * its entropy that counts only what an attacker's pattern list would not predict. Sequences (abc…, 987…, aceg…),
 * keyboard walks (qwerty, asdf, zxcv, 1qaz2wsx) and repeats count one character per run of four or more, and a
 * run of three characters seen before counts nothing.
 */

/** Shannon entropy in bits per item, with the Miller–Madow correction of its bias on short samples. */
function shannonBits(items: string[]): number {
  const counts = new Map<string, number>();
  for (const x of items) counts.set(x, (counts.get(x) ?? 0) + 1);
  let h = (counts.size - 1) / (2 * items.length * Math.LN2);
  for (const c of counts.values()) h -= (c / items.length) * Math.log2(c / items.length);
  return h;
}

/** Where each key is on a US QWERTY keyboard: [row, column], each row starting a little right of the one above. */
const QWERTY = new Map<string, [number, number]>(
  ["1234567890-=", "qwertyuiop[]", "asdfghjkl;'", "zxcvbnm,./"].flatMap((row, r) =>
    [...row].map((key, c) => [key, [r, c]] as [string, [number, number]])
  ),
);

/** Neighbours on a staggered keyboard: beside, and the two keys above and the two below that touch it. */
function qwertyAdjacent(a: string, b: string): boolean {
  const [pa, pb] = [QWERTY.get(a), QWERTY.get(b)];
  if (!pa || !pb) return false;
  const [dr, dc] = [pb[0] - pa[0], pb[1] - pa[1]];
  return (dr === 0 && Math.abs(dc) === 1) || (dr === -1 && (dc === 0 || dc === 1)) ||
    (dr === 1 && (dc === 0 || dc === -1));
}

/** Whether the steps to `i` and to `j` move by the same keys on the keyboard (a walk's column turns). */
function sameDisplacement(lower: string[], i: number, j: number): boolean {
  const [a, b, c, d] = [lower[i - 1], lower[i], lower[j - 1], lower[j]].map((k) => QWERTY.get(k));
  return !!(a && b && c && d) && b[0] - a[0] === d[0] - c[0] && b[1] - a[1] === d[1] - c[1] &&
    (b[0] !== a[0] || b[1] !== a[1]);
}

/** The position of a letter or a digit in its own alphabet, or null. */
function ordinal(c: string): { kind: "letter" | "digit"; at: number } | null {
  if (/^[a-z]$/.test(c)) return { kind: "letter", at: c.charCodeAt(0) - 97 };
  if (/^[0-9]$/.test(c)) return { kind: "digit", at: c.charCodeAt(0) - 48 };
  return null;
}

/** The step from one letter or digit to the next in the same alphabet, or null. */
function delta(a: string, b: string): number | null {
  const [oa, ob] = [ordinal(a), ordinal(b)];
  return oa && ob && oa.kind === ob.kind ? ob.at - oa.at : null;
}

/**
 * Whether the step to character `i` is one a pattern predicts (case aside): the same character again, a
 * neighbouring key, the next or previous letter or digit, or the same stride (up to 5) as the step before.
 */
function predictableStep(chars: string[], lower: string[], i: number): boolean {
  const [a, b] = [lower[i - 1], lower[i]];
  if (chars[i - 1] === chars[i] || qwertyAdjacent(a, b)) return true;
  // A walk down columns turns at the end of each (1qaz2wsx, qazwsx): the turn repeats the one 3 or 4 steps back.
  if ([3, 4].some((k) => i - k >= 1 && sameDisplacement(lower, i, i - k))) return true;
  const d = delta(a, b);
  if (d === null) return false;
  if (Math.abs(d) === 1) return true;
  return i >= 2 && Math.abs(d) <= 5 && delta(lower[i - 2], a) === d;
}

/**
 * For each character, whether a pattern predicts it: it ends a predictable step that belongs to a run of three
 * or more (four characters or more). A run's first character stays unpredicted. Shorter runs count in full: a
 * random secret has neighbouring keys or letters now and then (one step in four or so for random hex), and
 * counting those would refuse random secrets. Measured on 200,000 of each: no 64 random hex digits and no 43
 * random base64url characters scored under 150 bits; 32 random letters and digits, about 1 in 50,000 under 112.
 */
function predictedByRuns(secret: string): boolean[] {
  const chars = [...secret];
  const lower = chars.map((c) => c.toLowerCase());
  const step = lower.map((_, i) => i > 0 && predictableStep(chars, lower, i));
  // Each maximal run of predictable steps, by its length.
  const runLength = step.map(() => 0);
  for (let i = 1; i < step.length;) {
    if (!step[i]) {
      i++;
      continue;
    }
    let j = i;
    while (j < step.length && step[j]) j++;
    for (let k = i; k < j; k++) runLength[k] = j - i;
    i = j;
  }
  return runLength.map((len) => len >= 3);
}

/**
 * A secret's estimated entropy in bits: the bits per character of the character classes it uses, times the
 * number of characters that neither continue a sequence, keyboard walk or repeat (a run of four or more), nor
 * repeat a run of three or more seen before, scaled down by how unevenly its characters and pairs vary (Shannon
 * entropy with the Miller–Madow correction, against the most that many could show). "a" × 32 scores 0,
 * "abc…xyzABC…XYZ0…9" about 12, "1qaz2wsx3edc…" about 25, "Password1Password2Password3Pass4" about 60, 64
 * random hex digits about 250.
 */
export function estimatedEntropyBits(secret: string): number {
  const chars = [...secret];
  const n = chars.length;
  if (n < 3) return 0;
  const classes: [RegExp, number][] = [[/[a-z]/, 26], [/[A-Z]/, 26], [/[0-9]/, 10], [/[^A-Za-z0-9]/, 4]];
  const pool = classes.reduce((sum, [re, size]) => sum + (re.test(secret) ? size : 0), 0);
  if (pool < 2) return 0;
  const predicted = predictedByRuns(secret);
  let surprising = 1;
  for (let i = 1; i < n; i++) {
    const repeat = i + 3 <= n && secret.indexOf(secret.slice(i, i + 3)) < i;
    if (!repeat && !predicted[i]) surprising++;
  }
  const pairs = chars.slice(1).map((c, i) => chars[i] + c);
  const evenness = Math.min(
    1,
    shannonBits(chars) / Math.log2(Math.min(pool, n)),
    shannonBits(pairs) / Math.log2(Math.min(pool * pool, n - 1)),
  );
  return surprising * Math.log2(pool) * evenness;
}

/** Refused below this estimate: about 128 bits, with room for the estimate's error on short random secrets. */
export const MIN_SECRET_BITS = 112;

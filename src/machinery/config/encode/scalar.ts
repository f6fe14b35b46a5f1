/**
 * Scalar rules of the Go YAML libraries, needed to write strings with the quotes go-yaml would put around them and
 * numbers the way Go prints them:
 *  - what a plain scalar would be read back as (go-yaml v4, and yaml.v2 with its YAML 1.1 booleans);
 *  - the strings go-yaml quotes even though they read back as strings (YAML 1.1 booleans, base-60 numbers, `<<`);
 *  - Go's `strconv.FormatFloat(f, 'g', -1, 64)` and map key order.
 */

export type Dialect = "v4" | "v2";
export type Resolved = "str" | "null" | "bool" | "int" | "float" | "timestamp" | "merge";

const V4_WORDS: Record<string, Resolved> = {
  true: "bool", True: "bool", TRUE: "bool", false: "bool", False: "bool", FALSE: "bool",
  "": "null", "~": "null", null: "null", Null: "null", NULL: "null",
  ".nan": "float", ".NaN": "float", ".NAN": "float", ".inf": "float", ".Inf": "float", ".INF": "float",
  "+.inf": "float", "+.Inf": "float", "+.INF": "float", "-.inf": "float", "-.Inf": "float", "-.INF": "float",
  "-0": "float", "-0.0": "float", "<<": "merge",
};

const OLD_BOOLS = ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF"];

const V2_WORDS: Record<string, Resolved> = {
  true: "bool", True: "bool", TRUE: "bool", false: "bool", False: "bool", FALSE: "bool",
  ...Object.fromEntries(OLD_BOOLS.map((w) => [w, "bool" as Resolved])),
  "": "null", "~": "null", null: "null", Null: "null", NULL: "null",
  ".nan": "float", ".NaN": "float", ".NAN": "float", ".inf": "float", ".Inf": "float", ".INF": "float",
  "+.inf": "float", "+.Inf": "float", "+.INF": "float", "-.inf": "float", "-.Inf": "float", "-.INF": "float",
};

// First characters that make the Go resolvers look further; anything else is a string at once.
const V4_HINTS = "yYnNtTfFoO~<";
const V2_HINTS = "yYnNtTfFoO~";

const YAML_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const DOT_FLOAT = /^\.[0-9]+(?:[eE][-+]?[0-9]+)?$/;
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Go's strconv.ParseInt(s, 0, 64) (then ParseUint): decimal, 0x, 0o, 0b, or a leading 0 for octal. */
export function goInteger(s: string): bigint | undefined {
  const m = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return undefined;
  const body = m[2];
  let v: bigint;
  if (/^0[xXoObB]/.test(body)) v = BigInt("0" + body[1].toLowerCase() + body.slice(2));
  else if (body.length > 1 && body[0] === "0") v = BigInt("0o" + body.slice(1));
  else v = BigInt(body);
  if (m[1] === "-") {
    v = -v;
    return v >= -INT64_MAX - 1n ? v : undefined;
  }
  if (v <= INT64_MAX) return v;
  // ParseUint takes no sign.
  return m[1] === "" && v <= UINT64_MAX ? v : undefined;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TIMESTAMP =
  /^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:([Tt])(\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?(Z|[-+]\d{2}:\d{2}))|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?))?$/;

/** Whether Go's time.Parse accepts `s` in one of the layouts go-yaml tries for an unquoted timestamp. */
function isTimestamp(s: string): boolean {
  const m = TIMESTAMP.exec(s);
  if (!m) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS[month - 1];
  if (day < 1 || day > days) return false;
  const [h, mi, se] = m[4] ? [m[5], m[6], m[7]] : m[10] ? [m[10], m[11], m[12]] : [];
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(se) > 59)) return false;
  const zone = m[9];
  if (zone && zone !== "Z" && (Number(zone.slice(1, 3)) > 24 || Number(zone.slice(4, 6)) > 60)) return false;
  return true;
}

/** What a plain (unquoted) scalar `s` reads back as in go-yaml (v4) or yaml.v2. */
export function resolvePlain(s: string, dialect: Dialect): Resolved {
  const first = s[0];
  const words = dialect === "v4" ? V4_WORDS : V2_WORDS;
  const hints = dialect === "v4" ? V4_HINTS : V2_HINTS;
  const hinted = s === "" || hints.includes(first) || first === "." || first === "+" || first === "-" || (first >= "0" && first <= "9");
  if (!hinted) return "str";
  const word = Object.prototype.hasOwnProperty.call(words, s) ? words[s] : undefined;
  if (word) return word;
  if (first === ".") return DOT_FLOAT.test(s) && Number.isFinite(Number(s)) ? "float" : "str";
  if (first === "+" || first === "-" || (first >= "0" && first <= "9")) {
    if (isTimestamp(s)) return "timestamp";
    const plain = s.replaceAll("_", "");
    if (goInteger(plain) !== undefined) return "int";
    if (YAML_FLOAT.test(plain) && Number.isFinite(Number(plain))) return "float";
  }
  return "str";
}

export const isOldBool = (s: string) => OLD_BOOLS.includes(s);

const BASE60 = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
/** YAML 1.1 base-60 numbers (`1:30`): read as strings now, but quoted on output for older parsers. */
export const isBase60Float = (s: string) => s.includes(":") && BASE60.test(s);

/** Go's strconv.FormatFloat(f, 'g', -1, 64), with go-yaml's spellings of infinities and NaN. */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return ".nan";
  if (f === Infinity) return ".inf";
  if (f === -Infinity) return "-.inf";
  if (f === 0) return Object.is(f, -0) ? "-0" : "0";
  // toExponential() gives the shortest digits that read back as f, like Go's shortest formatting.
  const [mantissa, e] = f.toExponential().split("e");
  const exp = Number(e);
  // Go switches to an exponent below 1e-4 and from 1e6 up (JavaScript only from 1e21 or below 1e-6).
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return String(f);
}

/** An integral number as Go prints an int64/uint64 (exactly, without exponent). */
export function goInt(n: number): string {
  return Object.is(n, -0) ? "0" : BigInt(n).toString();
}

const LETTER = /\p{L}/u;
const DIGIT = /\p{Nd}/u;

/**
 * go-yaml's order for string map keys: letters by code point, but a run of digits compares as a number, so `a2`
 * sorts before `a10`. The v4 and v2 libraries differ in one detail (what follows equal digits).
 */
function keyLess(a: string[], b: string[], dialect: Dialect): boolean {
  let digits = false;
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] === b[i]) {
      digits = DIGIT.test(a[i]);
      continue;
    }
    const al = LETTER.test(a[i]);
    const bl = LETTER.test(b[i]);
    if (al && bl) return a[i].codePointAt(0)! < b[i].codePointAt(0)!;
    if (al || bl) return dialect === "v4" && digits ? al : bl;
    let an = 0n;
    let bn = 0n;
    if (a[i] === "0" || b[i] === "0") {
      for (let j = i - 1; j >= 0 && DIGIT.test(a[j]); j--) {
        if (a[j] !== "0") {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    let bi = i;
    for (; ai < a.length && DIGIT.test(a[ai]); ai++) an = an * 10n + BigInt(a[ai].codePointAt(0)! - 48);
    for (; bi < b.length && DIGIT.test(b[bi]); bi++) bn = bn * 10n + BigInt(b[bi].codePointAt(0)! - 48);
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return a[i].codePointAt(0)! < b[i].codePointAt(0)!;
  }
  return a.length < b.length;
}

/** Sorts string keys in go-yaml's map order. */
export function sortKeys(keys: readonly string[], dialect: Dialect): string[] {
  const split = new Map(keys.map((k) => [k, Array.from(k)]));
  return [...keys].sort((x, y) => {
    const a = split.get(x)!;
    const b = split.get(y)!;
    if (keyLess(a, b, dialect)) return -1;
    return keyLess(b, a, dialect) ? 1 : 0;
  });
}

/**
 * Values that Talos' Go types read and write in a form of their own, reproduced so a re-encoded config spells
 * them as upstream does: durations as Go prints them (`2m` becomes `2m0s`), disk sizes in humanize's SI units,
 * port ranges, and go-yaml's reading of booleans.
 */

const UNITS: Record<string, bigint> = {
  ns: 1n, us: 1_000n, "µs": 1_000n, "μs": 1_000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n,
};
const MAX_DURATION = 2n ** 63n - 1n;

/** Go's time.ParseDuration, in nanoseconds; undefined when Go would refuse the text. */
export function parseGoDuration(text: string): bigint | undefined {
  let s = text;
  let neg = false;
  if (s[0] === "-" || s[0] === "+") {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0n;
  if (s === "") return undefined;
  let total = 0n;
  const part = /^([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)/;
  while (s !== "") {
    const m = part.exec(s);
    if (!m || (m[1] === "" && (m[2] ?? "") === "")) return undefined;
    const unit = UNITS[m[3]];
    let v = BigInt(m[1] || "0") * unit;
    if (m[2]) {
      // The fraction is cut at nanoseconds, as Go does.
      const scale = 10n ** BigInt(m[2].length);
      v += (BigInt(m[2]) * unit) / scale;
    }
    total += v;
    if (total > MAX_DURATION + (neg ? 1n : 0n)) return undefined;
    s = s.slice(m[0].length);
  }
  return neg ? -total : total;
}

/** The digits of v / 10^prec after the point, without trailing zeros (Go's fmtFrac). */
function fraction(v: bigint, prec: number): [string, bigint] {
  let digits = "";
  let printed = false;
  for (let i = 0; i < prec; i++) {
    const d = v % 10n;
    printed = printed || d !== 0n;
    if (printed) digits = d.toString() + digits;
    v /= 10n;
  }
  return [printed ? "." + digits : "", v];
}

/** Go's Duration.String(): 1h2m3.5s, 1.5ms, 0s. */
export function formatGoDuration(ns: bigint): string {
  if (ns === 0n) return "0s";
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    const [prec, unit] = u < 1_000n ? [0, "ns"] : u < 1_000_000n ? [3, "µs"] : [6, "ms"];
    const [frac, whole] = fraction(u, prec);
    out = `${whole}${frac}${unit}`;
  } else {
    const [frac, secs] = fraction(u, 9);
    u = secs;
    out = `${u % 60n}${frac}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? "-" + out : out;
}

const SIZES: Record<string, number> = {
  b: 1, "": 1,
  kib: 2 ** 10, ki: 2 ** 10, kb: 1e3, k: 1e3,
  mib: 2 ** 20, mi: 2 ** 20, mb: 1e6, m: 1e6,
  gib: 2 ** 30, gi: 2 ** 30, gb: 1e9, g: 1e9,
  tib: 2 ** 40, ti: 2 ** 40, tb: 1e12, t: 1e12,
  pib: 2 ** 50, pi: 2 ** 50, pb: 1e15, p: 1e15,
  eib: 2 ** 60, ei: 2 ** 60, eb: 1e18, e: 1e18,
};

/** humanize.ParseBytes ("100 MB", "1.5GiB", "4096"); undefined when it would fail. */
export function parseBytes(s: string): number | undefined {
  const m = /^[\p{Nd}.,]*/u.exec(s)!;
  const num = m[0].replaceAll(",", "");
  if (!/^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/.test(num)) return undefined;
  const unit = SIZES[s.slice(m[0].length).trim().toLowerCase()];
  if (unit === undefined) return undefined;
  const v = Number(num) * unit;
  return v >= 2 ** 64 ? undefined : Math.floor(v);
}

/** Go's %.Nf: rounds to nearest, ties to even (JavaScript's toFixed rounds ties up). */
function goFixed(v: number, digits: number): string {
  const scaled = v * 10 ** digits;
  const floor = Math.floor(scaled);
  if (scaled - floor === 0.5 && floor % 2 === 0) return (floor / 10 ** digits).toFixed(digits);
  return v.toFixed(digits);
}

/** humanize.Bytes (SI units): "100 MB", "1.5 kB", "9 B". */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const sizes = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
  const e = Math.floor(Math.log(n) / Math.log(1000));
  const val = Math.floor((n / 1000 ** e) * 10 + 0.5) / 10;
  return `${goFixed(val, val < 10 ? 1 : 0)} ${sizes[e]}`;
}

/** A port range as Talos reads it: a port, or "lo-hi". */
export function parsePortRange(v: unknown): [number, number] | undefined {
  if (typeof v === "number" && Number.isInteger(v)) return [v, v];
  if (typeof v !== "string") return undefined;
  const m = /^(\d+)-(\d+)$/.exec(v);
  if (m) return [Number(m[1]), Number(m[2])];
  return /^\d+$/.test(v) ? [Number(v), Number(v)] : undefined;
}

const YAML11_BOOLS: Record<string, boolean> = { y: true, yes: true, on: true, true: true, n: false, no: false, off: false, false: false };

/** A boolean field's value as go-yaml reads it (true/false and the YAML 1.1 words, in lower, upper or title case). */
export function goBool(v: unknown): boolean | undefined {
  if (typeof v === "boolean") return v;
  if (typeof v !== "string" || v === "") return undefined;
  const lower = v.toLowerCase();
  const known = YAML11_BOOLS[lower];
  const cased = v === lower || v === v.toUpperCase() || v === v[0].toUpperCase() + v.slice(1).toLowerCase();
  return known !== undefined && cased ? known : undefined;
}

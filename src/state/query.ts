/**
 * Label and id queries with COSI semantics (cosi-project/runtime pkg/resource labels.go), because
 * talosctl and controllers send the same LabelQuery messages to us as to real Talos:
 * - a term on a missing key is false (so an inverted term on a missing key is true);
 * - every op except `exists` needs at least one value, else false;
 * - lt/lte compare strings; ltNumeric/lteNumeric parse integers with optional SI/IEC unit suffixes,
 *   and when either side does not parse the term is false whether or not it is inverted.
 */
import type { Metadata } from "../machinery/resources/resource.js";
import type { LabelTerm, ListOptions } from "./types.js";

export function matchesTerm(labels: Record<string, string>, term: LabelTerm): boolean {
  const result = evaluate(labels, term);
  if (result === undefined) return false;
  return term.invert ? !result : result;
}

function evaluate(labels: Record<string, string>, term: LabelTerm): boolean | undefined {
  if (!Object.hasOwn(labels, term.key)) return false;
  const value = labels[term.key];
  if (term.op !== "exists" && term.values.length === 0) return false;
  const first = term.values[0];
  switch (term.op) {
    case "exists":
      return true;
    case "equal":
      return value === first;
    case "in":
      return term.values.includes(value);
    // Go compares strings bytewise; for the ASCII labels in practice this equals JS code-unit order.
    case "lt":
      return value < first;
    case "lte":
      return value <= first;
    case "ltNumeric":
    case "lteNumeric": {
      const l = parseQuantity(value);
      const r = parseQuantity(first);
      if (l === undefined || r === undefined) return undefined;
      return term.op === "ltNumeric" ? l < r : l <= r;
    }
    default:
      throw new Error(`unsupported label term operator ${String(term.op)}`);
  }
}

const IEC: Record<string, bigint> = { pi: 1n << 50n, ti: 1n << 40n, gi: 1n << 30n, mi: 1n << 20n, ki: 1n << 10n };
const SI: Record<string, bigint> = { p: 10n ** 15n, t: 10n ** 12n, g: 10n ** 9n, m: 10n ** 6n, k: 10n ** 3n };

/** "10", "-3", "4Gi", "2k": leading digits/minus signs, then an optional unit. */
export function parseQuantity(raw: string): bigint | undefined {
  const value = raw.trim();
  const m = /^[0-9-]*/.exec(value)!;
  const digits = m[0];
  if (!/^-?[0-9]+$/.test(digits)) return undefined;
  const units = value.slice(digits.length).trim().toLowerCase();
  let multiplier = 1n;
  if (units !== "") {
    const mult = IEC[units.slice(0, 2)] ?? SI[units[0]];
    if (mult === undefined) return undefined;
    multiplier = mult;
  }
  return BigInt(digits) * multiplier;
}

export function matchesQuery(md: Metadata, opts: ListOptions | undefined): boolean {
  if (!opts) return true;
  // search() ignores lastIndex, so a caller's /g regexp cannot make matching stateful.
  if (opts.idRegexp && md.id.search(opts.idRegexp) === -1) return false;
  return (opts.labels ?? []).every((t) => matchesTerm(md.labels, t));
}

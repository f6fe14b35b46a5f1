/**
 * Access to the upstream Talos test documents in the shared fixtures folder (test/helpers/fixtures.ts), plus a
 * semantic normalizer: the upstream Go encoder spells out unset fields (`type: ""`, `certSANs: []`), which mean "absent".
 */
export { FIXTURES, fixture, hasFixtures } from "../../helpers/fixtures.js";

/** Drops empty strings, empty lists, empty maps and nulls, recursively, so "unset" spellings compare equal. */
export function normalize(v: unknown): unknown {
  if (Array.isArray(v)) {
    const out = v.map(normalize).filter((x) => x !== undefined);
    return out.length ? out : undefined;
  }
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const n = normalize(x);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (v === "" || v === null || v === undefined) return undefined;
  return v;
}

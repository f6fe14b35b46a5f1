/**
 * Bounds on what a machine config may be. Every bound is far above what real configs use (a generated control plane
 * config is ~12 KB, ~600 YAML nodes, nesting depth ~8, no aliases) and low enough that the worst input inside them is
 * parsed, validated and stored in bounded time and memory, and that every identity built from it fits a TLS
 * handshake. Each refusal names the bound and the YAML path.
 *
 * Why these numbers:
 *  - 4 MiB per config: upstream apid accepts 32 MiB gRPC messages, but a config that large is a mistake (the largest
 *    real ones carry a CNI as an inline manifest, ~1 MiB). The whole pipeline (parse, schema, diff, store, the
 *    MachineConfig resource) holds a few copies of the text, so the bound keeps the peak in the tens of MB.
 *  - 2 MiB per string: one inline manifest or file body; a single scalar may not take the whole config.
 *  - 1 KiB per map key: keys are field names, label/annotation keys (≤ 317 bytes), sysctl names, registry hosts.
 *  - 100,000 YAML tokens (keys, values, punctuation, indentation, line breaks, comments; a generated config has
 *    650-1,500): parsing costs the same per token whatever its length, so this bounds the time of every stage, and
 *    is checked while lexing, before anything else is built. The worst accepted input parses and validates in a
 *    few hundred milliseconds on one loaded core; beyond it the event loop would stall for seconds.
 *  - 200,000 entries after alias expansion, 64 levels of nesting, 1,000 anchors/aliases: the schema walks every
 *    node (and recurses per level); aliases are what let a small text expand into a huge tree.
 *  - 256 documents: the Talos 1.14 layout uses ~30.
 *  - certSANs: 512 entries and 16 KiB in total. The API server certificate carries them all; Go's TLS client (talosctl)
 *    refuses handshake messages over 64 KiB, and the certificate also carries the CA's subject and the node's own
 *    addresses, so the SANs get a quarter of that.
 *  - machine.files: 1 MiB of contents in total (small drop-in files; anything bigger belongs on a disk).
 *  - error texts: 12 problems of at most 300 characters each, then "and N more": a gRPC status message travels in an
 *    HTTP/2 trailer, and Node's HTTP/2 refuses to send a header block over 64 KiB (the client then waits forever).
 */

export const KiB = 1024;
export const MiB = 1024 * KiB;

export const LIMITS = {
  configBytes: 4 * MiB,
  stringBytes: 2 * MiB,
  keyBytes: 1 * KiB,
  tokens: 100_000,
  nodes: 200_000,
  depth: 64,
  aliases: 1_000,
  anchors: 1_000,
  documents: 256,
  certSANs: 512,
  certSANsBytes: 16 * KiB,
  filesBytes: 1 * MiB,
  /** A CA certificate larger than this (DER) would crowd the handshake: its subject is repeated in every leaf. */
  caCertBytes: 8 * KiB,
  /** RSA CA keys: below 2048 bits clients refuse them, above 8192 every signature costs seconds. */
  rsaMinBits: 2048,
  rsaMaxBits: 8192,
  errorProblems: 12,
  errorLineChars: 300,
} as const;

/** `4 MiB`, `1.5 MiB`, `900 KiB`, `12 bytes`. */
export function formatBytes(n: number): string {
  if (n >= MiB) return `${trimNum(n / MiB)} MiB`;
  if (n >= KiB) return `${trimNum(n / KiB)} KiB`;
  return `${n} bytes`;
}

function trimNum(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1).replace(/\.0$/, "");
}

/** Shortens `s` to at most `max` characters, saying how long it was. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const note = `… (${s.length} characters)`;
  return s.slice(0, Math.max(0, max - note.length)) + note;
}

/**
 * A list of problems as one bounded text: the first `LIMITS.errorProblems` lines (each clipped), then
 * "... and N more problems". The full list stays available to callers that print it (e.g. the CLI).
 */
export function boundedList(lines: readonly string[]): string {
  const shown = lines.slice(0, LIMITS.errorProblems).map((l) => clip(l, LIMITS.errorLineChars));
  const rest = lines.length - shown.length;
  if (rest > 0) shown.push(`... and ${rest} more ${rest === 1 ? "problem" : "problems"}`);
  return shown.join("\n");
}

/** Hard bound for any error text that leaves the process (the gRPC status message). */
export const MAX_ERROR_TEXT = LIMITS.errorProblems * (LIMITS.errorLineChars + 1) + 64;

export function boundText(s: string): string {
  if (s.length <= MAX_ERROR_TEXT) return s;
  return boundedList(s.split("\n")).slice(0, MAX_ERROR_TEXT);
}

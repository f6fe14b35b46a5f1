/**
 * /etc/machine-id from the node identity, the way upstream derives it (cluster.NodeIdentityController: the node id
 * decoded to bytes, the first 16 of them in lowercase hex), so the id the kubelet reports stays the same across
 * reboots and changes only when the identity does (reset). The decoding is the inverse of this project's node id
 * encoding (src/controllers/cluster/node-identity.ts: the random bytes as one base62 number); upstream's base62 is a
 * bit-packing variant, so the same id string gives another machine id there; only stability matters here.
 */

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Big-endian bytes of a base62 number (the node id's encoding); throws on a character outside the alphabet. */
export function base62Decode(text: string): Uint8Array {
  let n = 0n;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) throw new Error(`invalid base62 character ${JSON.stringify(ch)} in node id`);
    n = n * 62n + BigInt(v);
  }
  const out: number[] = [];
  while (n > 0n) {
    out.unshift(Number(n & 0xffn));
    n >>= 8n;
  }
  return Uint8Array.from(out);
}

/** The 32 hex characters of /etc/machine-id for a node id; throws when the id decodes to fewer than 16 bytes. */
export function machineIdFromNodeId(nodeId: string): string {
  const raw = base62Decode(nodeId);
  if (raw.length < 16) throw new Error(`node id ${JSON.stringify(nodeId)} is too short for a machine id (${raw.length} bytes, need 16)`);
  return Buffer.from(raw.subarray(0, 16)).toString("hex");
}

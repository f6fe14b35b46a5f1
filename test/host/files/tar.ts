/** A minimal ustar/PAX reader for assertions on archives the node produced (test helper). */
import { gunzipSync } from "node:zlib";

export interface TarItem {
  name: string;
  type: string;
  size: number;
  mode: number;
  uid: number;
  link: string;
  data: Buffer;
}

const str = (b: Buffer, o: number, n: number) => {
  const s = b.subarray(o, o + n);
  const z = s.indexOf(0);
  return s.subarray(0, z < 0 ? s.length : z).toString("utf8");
};
const oct = (b: Buffer, o: number, n: number) => parseInt(str(b, o, n).trim() || "0", 8);

/** Every entry of a tar (gzip is detected); throws on a truncated or malformed archive. */
export function readTar(input: Buffer): TarItem[] {
  const buf = input[0] === 0x1f && input[1] === 0x8b ? gunzipSync(input) : input;
  const out: TarItem[] = [];
  let pax: Record<string, string> = {};
  let off = 0;
  for (;;) {
    if (off + 512 > buf.length) throw new Error(`tar ends without its end blocks at ${off}`);
    const h = buf.subarray(off, off + 512);
    if (h.every((x) => x === 0)) return out;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
    if (sum !== oct(h, 148, 8)) throw new Error(`bad tar header checksum at ${off}`);
    const size = oct(h, 124, 12);
    const type = String.fromCharCode(h[156] || 0x30);
    const data = buf.subarray(off + 512, off + 512 + size);
    if (data.length !== size) throw new Error(`tar entry at ${off} is cut short`);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      pax = {};
      for (const rec of data.toString("utf8").split("\n").filter(Boolean)) {
        const kv = rec.slice(rec.indexOf(" ") + 1);
        pax[kv.slice(0, kv.indexOf("="))] = kv.slice(kv.indexOf("=") + 1);
      }
      continue;
    }
    out.push({ name: pax.path ?? str(h, 0, 100), type, size, mode: oct(h, 100, 8), uid: oct(h, 108, 8), link: pax.linkpath ?? str(h, 157, 100), data: Buffer.from(data) });
    pax = {};
  }
}

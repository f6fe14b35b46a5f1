/**
 * A small ustar writer (with PAX records for long names) — enough for Kubeconfig and Copy replies,
 * which talosctl extracts with Go's archive/tar.
 */
export interface TarEntry {
  name: string;
  type: "file" | "dir" | "symlink";
  mode: number;
  mtime: Date;
  size?: number;
  linkName?: string;
  uid?: number;
  gid?: number;
}

const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function writeString(buf: Buffer, s: string, offset: number, width: number): void {
  buf.write(s.slice(0, width), offset, width, "utf8");
}

function headerBlock(e: TarEntry, name: string, typeflag: string, size: number, linkName = ""): Buffer {
  const h = Buffer.alloc(BLOCK);
  writeString(h, name, 0, 100);
  writeString(h, octal(e.mode & 0o7777, 8), 100, 8);
  writeString(h, octal(e.uid ?? 0, 8), 108, 8);
  writeString(h, octal(e.gid ?? 0, 8), 116, 8);
  writeString(h, octal(size, 12), 124, 12);
  writeString(h, octal(Math.floor(e.mtime.getTime() / 1000), 12), 136, 12);
  h.fill(0x20, 148, 156); // checksum field counts as spaces while summing
  writeString(h, typeflag, 156, 1);
  writeString(h, linkName, 157, 100);
  writeString(h, "ustar\0", 257, 6);
  writeString(h, "00", 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  writeString(h, sum.toString(8).padStart(6, "0") + "\0 ", 148, 8);
  return h;
}

function pad(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (`${len}${body}`.length !== len) len = `${len}${body}`.length;
  return `${len}${body}`;
}

/** Header (+ PAX header when needed) for one entry; the caller appends the data and `tarPadding(size)`. */
export function tarHeader(e: TarEntry): Buffer {
  const typeflag = e.type === "dir" ? "5" : e.type === "symlink" ? "2" : "0";
  const size = e.type === "file" ? (e.size ?? 0) : 0;
  const name = e.type === "dir" && !e.name.endsWith("/") ? `${e.name}/` : e.name;
  const parts: Buffer[] = [];
  const link = e.linkName ?? "";
  if (Buffer.byteLength(name) > 100 || Buffer.byteLength(link) > 100) {
    const pax = Buffer.from(paxRecord("path", name) + (link ? paxRecord("linkpath", link) : ""));
    parts.push(headerBlock(e, "PaxHeaders/entry", "x", pax.length), pax, pad(pax.length));
  }
  parts.push(headerBlock(e, name, typeflag, size, link));
  return Buffer.concat(parts);
}

export const tarPadding = pad;

/** Two zero blocks end an archive. */
export const tarTrailer = (): Buffer => Buffer.alloc(BLOCK * 2);

/** A complete archive of in-memory files. */
export function tarFiles(files: { name: string; data: Uint8Array; mode?: number }[]): Buffer {
  const now = new Date();
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(tarHeader({ name: f.name, type: "file", mode: f.mode ?? 0o644, mtime: now, size: f.data.length }));
    parts.push(Buffer.from(f.data), pad(f.data.length));
  }
  parts.push(tarTrailer());
  return Buffer.concat(parts);
}

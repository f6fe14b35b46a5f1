/**
 * ImageService List and Remove over containerd's image store (through Debian's `ctr`), for `talosctl image
 * list` / `talosctl image remove`. `ctr images ls` prints names, digests and labels but only a rounded size and no
 * dates, so the size is the sum of the manifest, config and layer blobs for this machine's platform (what
 * containerd's own image size counts), and the date is the image config's `created` field.
 */
import type { Ctr } from "../../supervisor/index.js";
import { ContainerdContent } from "./containerd.js";
import { selectManifest } from "./oci.js";

export interface ImageInfo {
  name: string;
  digest: string;
  size: number;
  createdAt?: Date;
  labels: Record<string, string>;
}

interface Row {
  name: string;
  digest: string;
  labels: Record<string, string>;
}

/** `ctr images ls` columns: REF TYPE DIGEST SIZE PLATFORMS LABELS (SIZE is two words, e.g. "150.6 MiB"). */
export function parseImageRows(out: string): Row[] {
  return out
    .split("\n")
    .slice(1)
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const cols = l.split(/\s+/);
      const labelText = cols.length >= 7 ? cols.slice(6).join(" ") : "-";
      const labels: Record<string, string> = {};
      if (labelText !== "-") {
        for (const kv of labelText.split(",")) {
          const i = kv.indexOf("=");
          if (i > 0) labels[kv.slice(0, i)] = kv.slice(i + 1);
        }
      }
      return { name: cols[0], digest: cols[2], labels };
    });
}

async function describe(content: ContainerdContent, row: Row, arch: string): Promise<ImageInfo> {
  try {
    const top = await content.blob(row.digest);
    const { manifest, digest } = await selectManifest(content, top, arch);
    // an index adds the platform manifest it points at
    const inner = digest === row.digest ? 0 : (await content.blob(digest)).length;
    const size = top.length + inner + manifest.config.size + manifest.layers.reduce((n, l) => n + l.size, 0);
    const config = JSON.parse((await content.blob(manifest.config.digest)).toString("utf8")) as { created?: string };
    const created = config.created ? new Date(config.created) : undefined;
    return { ...row, size, createdAt: created && !Number.isNaN(created.getTime()) ? created : undefined };
  } catch {
    // an image whose blobs are not all present (another platform, a partial pull): listed without size
    return { ...row, size: 0 };
  }
}

export async function listImages(ctr: Ctr, namespace: string, arch: string): Promise<ImageInfo[]> {
  const content = new ContainerdContent(ctr, namespace);
  const rows = parseImageRows(await ctr.exec(["images", "ls"], namespace));
  const out: ImageInfo[] = [];
  for (const r of rows) out.push(await describe(content, r, arch));
  return out;
}

/** Removes an image by name; false when there was no such image. */
export async function removeImage(ctr: Ctr, namespace: string, ref: string): Promise<boolean> {
  const have = parseImageRows(await ctr.exec(["images", "ls"], namespace)).some((r) => r.name === ref);
  if (!have) return false;
  await ctr.exec(["images", "rm", "--sync", ref], namespace);
  return true;
}

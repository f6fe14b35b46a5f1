/**
 * A kubeconfig with its file references made inline: the kubelet writes `client-certificate`/`client-key`
 * paths (its rotated certificate under /var/lib/kubelet/pki), and the CA may be a path too. Reading those files
 * through the caller's reader (under a test root, through the host Files) instead of letting the Kubernetes
 * client open them itself keeps every file read in one place.
 */
import { parse, stringify } from "yaml";

const REFS: [section: "clusters" | "users", inner: "cluster" | "user", file: string, data: string][] = [
  ["clusters", "cluster", "certificate-authority", "certificate-authority-data"],
  ["users", "user", "client-certificate", "client-certificate-data"],
  ["users", "user", "client-key", "client-key-data"],
];

export async function inlineKubeconfigFiles(text: string, readFile: (path: string) => Promise<Buffer | string>): Promise<string> {
  let doc: Record<string, unknown>;
  try {
    doc = parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`invalid kubeconfig: ${(e as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null) throw new Error("invalid kubeconfig: not a YAML mapping");
  let changed = false;
  for (const [section, inner, fileKey, dataKey] of REFS) {
    for (const entry of (doc[section] as Record<string, Record<string, unknown>>[] | undefined) ?? []) {
      const body = entry?.[inner];
      const path = body?.[fileKey];
      if (typeof path !== "string" || path === "" || body[dataKey]) continue;
      let content: Buffer | string;
      try {
        content = await readFile(path);
      } catch (e) {
        throw new Error(`kubeconfig ${fileKey} ${path}: ${(e as Error).message}`);
      }
      body[dataKey] = Buffer.from(content).toString("base64");
      delete body[fileKey];
      changed = true;
    }
  }
  return changed ? stringify(doc) : text;
}

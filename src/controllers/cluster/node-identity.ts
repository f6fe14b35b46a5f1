/**
 * cluster.NodeIdentityController: a random node id (32 random bytes, base62) that survives reboots.
 * It lives in `<stateDir>/node-identity.yaml` (Talos keeps the same file on STATE), written atomically
 * so a crash cannot leave a half-written id; a wipe of the state folder resets it, as a reset does.
 */
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import { parse } from "yaml";
import { hostFiles, isNotFound, writeFileAtomic, type Files } from "../../host/files/index.js";
import { CLUSTER_NS, IdentityType } from "../../machinery/resources/types/cluster.js";
import type { Controller } from "../../state/runtime/index.js";

export const NODE_IDENTITY_FILE = "node-identity.yaml";

export interface NodeIdentityOptions {
  stateDir: string;
  /** Source of randomness, for tests. */
  random?: (n: number) => Uint8Array;
  files?: Files;
}

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function base62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || "0";
}

export function nodeIdentityController(opts: NodeIdentityOptions): Controller {
  const file = path.join(opts.stateDir, NODE_IDENTITY_FILE);
  const random = opts.random ?? ((n: number) => new Uint8Array(randomBytes(n)));
  const files = opts.files ?? hostFiles;
  return {
    name: "cluster.NodeIdentityController",
    inputs: [],
    outputs: [{ type: IdentityType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      let nodeId = await readNodeId(files, file);
      if (!nodeId) {
        nodeId = base62(random(32));
        await writeFileAtomic(files, file, `nodeId: ${nodeId}\n`, 0o600);
        ctx.log("node identity generated", { nodeId });
      }
      ctx.apply({ namespace: CLUSTER_NS, type: IdentityType.type, id: "local", spec: { nodeId } });
    },
  };
}

async function readNodeId(files: Files, file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await files.readFile(file, "utf8");
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const doc = parse(text) as { nodeId?: unknown } | null;
  if (typeof doc?.nodeId !== "string" || doc.nodeId === "") {
    throw new Error(`${file}: no nodeId in the node identity file (remove it to generate a new identity)`);
  }
  return doc.nodeId;
}

/**
 * files.EtcFileController's status half: EtcFileStatus (`files`/<name>) for each etc file the node serves
 * (`hosts`, `resolv.conf`), whose `specVersion` counts the contents the file has had (upstream: the version of the
 * EtcFileSpec that was written). Where machined manages the network it writes these files itself
 * (network/etc-files.ts); in local mode they are the host's, which the node uses as they are.
 */
import { createHash } from "node:crypto";
import { hostFiles, type Files } from "../../host/files/index.js";
import { join } from "node:path";
import { EtcFileStatusType, FILES_NS } from "../../machinery/resources/types/node-config.js";
import type { Controller } from "../../state/runtime/index.js";

export interface EtcFileStatusOptions {
  /** The etc folder; default "/etc". */
  etcRoot?: string;
  files?: string[];
  refreshMs?: number;
  fs?: Files;
}

export function etcFileStatusController(opts: EtcFileStatusOptions = {}): Controller {
  const root = opts.etcRoot ?? "/etc";
  const names = opts.files ?? ["hosts", "resolv.conf"];
  const seen = new Map<string, { hash: string; version: number }>();
  return {
    name: "files.EtcFileController",
    inputs: [],
    outputs: [{ type: EtcFileStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const keep: string[] = [];
      for (const name of names) {
        const content = await (opts.fs ?? hostFiles).readFile(join(root, name)).catch(() => undefined);
        if (content === undefined) continue;
        const hash = createHash("sha256").update(content).digest("hex");
        const prev = seen.get(name);
        const version = !prev ? 1 : prev.hash === hash ? prev.version : prev.version + 1;
        seen.set(name, { hash, version });
        ctx.apply({ namespace: FILES_NS, type: EtcFileStatusType.type, id: name, spec: { specVersion: String(version) } });
        keep.push(name);
      }
      ctx.cleanup(FILES_NS, EtcFileStatusType.type, keep);
      return { requeueAfterMs: opts.refreshMs ?? 30_000 };
    },
  };
}

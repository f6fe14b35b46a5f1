/**
 * k8s.StaticPodFilesController: writes every StaticPod resource as a manifest into the kubelet's
 * manifest folder (`staticPodPath`), and removes the manifests of pods that are gone. Only files this
 * controller owns (prefix `talos-`) are ever touched; writes are atomic so the kubelet never reads half
 * a manifest.
 */
import { join } from "node:path";
import { hostFiles, writeFileAtomic, type Files } from "../../host/files/index.js";
import { K8S_NS, StaticPodType } from "../../machinery/resources/types/k8s.js";
import { specYaml } from "../../machinery/resources/render.js";
import type { Controller } from "../../state/runtime/index.js";

const PREFIX = "talos-";

export function staticPodFilesController(opts: { dir: string; files?: Files }): Controller {
  const fs = opts.files ?? hostFiles;
  return {
    name: "k8s.StaticPodFilesController",
    inputs: [{ namespace: K8S_NS, type: StaticPodType.type, kind: "strong" }],
    outputs: [],
    async reconcile(ctx) {
      await fs.mkdir(opts.dir, { recursive: true });
      const wanted = new Set<string>();
      for (const pod of ctx.list(K8S_NS, StaticPodType.type)) {
        const name = `${PREFIX}${pod.metadata.id}.yaml`;
        wanted.add(name);
        const text = specYaml(StaticPodType, pod.spec as never);
        const path = join(opts.dir, name);
        const current = await fs.readFile(path, "utf8").catch(() => undefined);
        if (current !== text) await writeFileAtomic(fs, path, text, 0o644);
      }
      for (const f of await fs.readdir(opts.dir)) {
        if (f.startsWith(PREFIX) && f.endsWith(".yaml") && !wanted.has(f)) await fs.rm(join(opts.dir, f), { force: true });
      }
    },
  };
}

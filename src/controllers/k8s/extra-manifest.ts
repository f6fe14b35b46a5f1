/**
 * k8s.ExtraManifestController: the user's manifests as Manifest resources `controlplane`/`<priority>-<name>`:
 * inline manifests parsed from the config, URL manifests downloaded (http/https) once the network is up. A
 * manifest that fails (download, bad YAML) keeps its previous resource and fails the reconcile, which retries;
 * the error names every failing manifest. Inline manifests do not wait for the network (upstream waits for it
 * for all, though they need none).
 */
import { downloadText, type Downloader } from "../../host/download.js";
import { parseManifestYaml } from "../../machinery/kubernetes/manifest-objects.js";
import { readSpec } from "../../machinery/resources/read.js";
import { CONTROLPLANE_NS, EXTRA_MANIFESTS_CONFIG_ID, ExtraManifestsConfigType, ManifestType, type ExtraManifest } from "../../machinery/resources/types/k8s-manifests.js";
import { NETWORK_NS, NETWORK_STATUS_ID, NetworkStatusType } from "../../machinery/resources/types/network.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";

export interface ExtraManifestOptions {
  download?: Downloader;
}

export function extraManifestController(opts: ExtraManifestOptions = {}): Controller {
  const download = opts.download ?? downloadText;
  return {
    name: "k8s.ExtraManifestController",
    inputs: [
      { namespace: CONTROLPLANE_NS, type: ExtraManifestsConfigType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: NetworkStatusType.type, id: NETWORK_STATUS_ID, kind: "weak" },
    ],
    outputs: [{ type: ManifestType.type, kind: "shared" }],
    async reconcile(ctx) {
      const cfg = readSpec(ctx, ExtraManifestsConfigType, EXTRA_MANIFESTS_CONFIG_ID);
      if (!cfg) {
        ctx.cleanup(CONTROLPLANE_NS, ManifestType.type, []);
        return;
      }
      const net = readSpec(ctx, NetworkStatusType, NETWORK_STATUS_ID);
      const online = net?.addressReady === true && net.connectivityReady === true;
      const keep: string[] = [];
      const errors: string[] = [];
      for (const m of cfg.extraManifests) {
        const id = `${m.priority}-${m.name}`;
        keep.push(id);
        // Without the network a URL manifest keeps whatever was downloaded before; the network event brings us back.
        if (!m.inlineManifest && !online) continue;
        try {
          const text = m.inlineManifest ? m.inlineManifest : await download(m.url, { headers: m.extraHeaders, signal: ctx.signal });
          write(ctx, id, m, text);
        } catch (e) {
          errors.push(`${m.inlineManifest ? "inline manifest" : "manifest"} ${JSON.stringify(m.name)}: ${(e as Error).message}`);
        }
      }
      if (errors.length > 0) throw new Error(errors.length === 1 ? errors[0] : `${errors.length} extra manifests failed:\n${errors.map((e) => `\t* ${e}`).join("\n")}`);
      ctx.cleanup(CONTROLPLANE_NS, ManifestType.type, keep);
    },
  };
}

function write(ctx: ReconcileContext, id: string, m: ExtraManifest, text: string): void {
  let items;
  try {
    items = parseManifestYaml(text);
  } catch (e) {
    throw new Error(`${m.url ? `${m.url}: ` : ""}${(e as Error).message}`);
  }
  ctx.apply({ namespace: CONTROLPLANE_NS, type: ManifestType.type, id, spec: { items } });
}

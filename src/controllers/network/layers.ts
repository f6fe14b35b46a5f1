/** Config layers, lowest priority first (upstream ConfigLayer), and the "highest layer wins" merge. */
import type { ConfigLayerName } from "../../machinery/resources/types/network.js";

export const LAYERS: ConfigLayerName[] = ["default", "cmdline", "platform", "operator", "configuration"];

export const layerRank = (l: ConfigLayerName): number => LAYERS.indexOf(l);

/** Per id, the spec from the highest layer (ties: the later one). */
export function mergeByLayer<S extends { layer: ConfigLayerName }>(items: Array<{ id: string; spec: S }>): Map<string, S> {
  const out = new Map<string, S>();
  for (const { id, spec } of items) {
    const have = out.get(id);
    if (!have || layerRank(spec.layer) >= layerRank(have.layer)) out.set(id, spec);
  }
  return out;
}

/** runtime.SBOMItemController: one SBOMItem per component of this agent (host/sbom.ts), id = component name. */
import { readSbom, type SbomEntry } from "../../host/sbom.js";
import { SBOMItemType, type SBOMItemSpec } from "../../machinery/resources/types/runtime-info.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export function sbomController(opts: { read?: () => Promise<SbomEntry[]> } = {}): Controller {
  const read = opts.read ?? (() => readSbom());
  return {
    name: "runtime.SBOMItemController",
    inputs: [],
    outputs: [{ type: SBOMItemType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const keep: string[] = [];
      for (const e of await read()) {
        const spec: SBOMItemSpec = { name: e.name, version: e.version, ...(e.license ? { license: e.license } : {}), ...(e.purls ? { purls: e.purls } : {}) };
        ctx.apply({ namespace: RUNTIME_NS, type: SBOMItemType.type, id: e.name, spec });
        keep.push(e.name);
      }
      ctx.cleanup(RUNTIME_NS, SBOMItemType.type, keep);
    },
  };
}

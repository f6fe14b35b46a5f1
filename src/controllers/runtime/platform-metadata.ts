/**
 * runtime.PlatformMetadataController: PlatformMetadata `platformmetadata`. This node runs on bare metal (or a VM
 * presented as such, or a host in local mode) and has no cloud metadata service, so the metadata is what the
 * metal platform reports: the platform name, and the hostname the node has.
 */
import { HOSTNAME_ID, HostnameStatusType } from "../../machinery/resources/types/network.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { PlatformMetadataType, type PlatformMetadataSpec } from "../../machinery/resources/types/runtime-info.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export function platformMetadataController(opts: { platform?: string } = {}): Controller {
  return {
    name: "runtime.PlatformMetadataController",
    inputs: [{ ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" }],
    outputs: [{ type: PlatformMetadataType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const spec: PlatformMetadataSpec = { platform: opts.platform ?? "metal", ...(hs?.hostname ? { hostname: hs.hostname } : {}) };
      ctx.apply({ namespace: RUNTIME_NS, type: PlatformMetadataType.type, id: "platformmetadata", spec });
    },
  };
}

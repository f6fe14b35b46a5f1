/**
 * runtime.PlatformMetadataController: PlatformMetadata `platformmetadata`. This node runs on bare metal (or a VM
 * presented as such, or a host in local mode) and has no cloud metadata service, so the metadata is what the
 * metal platform reports: the platform name, and the hostname the node has.
 */
import { HOSTNAME_STATUS_TYPE, NETWORK_NS, type HostnameStatusLike } from "../config/external.js";
import { PlatformMetadataType, type PlatformMetadataSpec } from "../../machinery/resources/types/runtime-info.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export function platformMetadataController(opts: { platform?: string } = {}): Controller {
  return {
    name: "runtime.PlatformMetadataController",
    inputs: [{ namespace: NETWORK_NS, type: HOSTNAME_STATUS_TYPE, id: "hostname", kind: "weak" }],
    outputs: [{ type: PlatformMetadataType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const hs = ctx.get({ namespace: NETWORK_NS, type: HOSTNAME_STATUS_TYPE, id: "hostname" })?.spec as HostnameStatusLike | undefined;
      const spec: PlatformMetadataSpec = { platform: opts.platform ?? "metal", ...(hs?.hostname ? { hostname: hs.hostname } : {}) };
      ctx.apply({ namespace: RUNTIME_NS, type: PlatformMetadataType.type, id: "platformmetadata", spec });
    },
  };
}

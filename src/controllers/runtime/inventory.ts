/**
 * The node-inventory controllers in one list for the wiring (core.ts): what the node is and has — kernel command
 * line, platform, software (SBOM), root secrets, Ethernet link facts, block
 * volumes (discovered, system disk, volume configs), etc file statuses, image cache and SideroLink config.
 * Hardware inventory (SMBIOS) is published by hardware.SystemInfoController, which core.ts already runs.
 * Types: registerInventoryTypes (machinery/resources/types/inventory.ts).
 */
import type { Controller } from "../../state/runtime/index.js";
import { discoveredVolumesController } from "../block/discovered-volumes.js";
import { systemDiskController } from "../block/system-disk.js";
import { volumeConfigController } from "../block/volume-config.js";
import { imageCacheConfigController } from "../cri/image-cache-config.js";
import { etcFileStatusController } from "../files/etc-file-status.js";
import { ethernetStatusController } from "../network/ethernet-status.js";
import { siderolinkConfigController } from "../siderolink/config.js";
import { kernelCmdlineController } from "./kernel-cmdline.js";
import { platformMetadataController } from "./platform-metadata.js";
import { sbomController } from "./sbom.js";

export interface InventoryOptions {
  /** Filesystem root holding `proc/`; default "/". */
  hostRoot?: string;
  /** The etc folder whose hosts/resolv.conf the node serves; default "/etc". */
  etcRoot?: string;
}

export function inventoryControllers(opts: InventoryOptions = {}): Controller[] {
  return [
    kernelCmdlineController({ root: opts.hostRoot }),
    platformMetadataController(),
    sbomController(),
    ethernetStatusController(),
    systemDiskController(),
    discoveredVolumesController(),
    volumeConfigController(),
    etcFileStatusController({ etcRoot: opts.etcRoot }),
    imageCacheConfigController(),
    siderolinkConfigController(),
  ];
}

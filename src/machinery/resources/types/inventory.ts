/**
 * Registration of the node-inventory types (hardware inventory, runtime facts, root secrets, discovery, extra
 * network and block resources, etc files, image cache, SideroLink config, bootstrap manifests): one call for the
 * wiring, next to registerCoreTypes. Types without data on a node (no TPM, no SideroLink) still list, empty.
 */
import type { TypeRegistry } from "../registry.js";
import { DISCOVERY_TYPES } from "./discovery.js";
import { HARDWARE_INVENTORY_TYPES } from "./hardware-inventory.js";
import { NETWORK_EXTRA_TYPES } from "./network-extra.js";
import { EXTRA_NAMESPACES, NODE_CONFIG_TYPES } from "./node-config.js";
import { RUNTIME_INFO_TYPES } from "./runtime-info.js";
import { SECRETS_NS } from "./secrets.js";
import { VOLUMES_TYPES } from "./volumes.js";

const NAMESPACES: [string, string][] = [
  ...EXTRA_NAMESPACES,
  [SECRETS_NS, "Resources with secret material."],
  ["hardware", "Hardware resources."],
  ["network", "Networking resources."],
  ["controlplane", "Kubernetes control plane resources."],
  ["config", "Talos node configuration."],
  ["runtime", "Talos runtime resources."],
  ["cluster", "Cluster configuration and discovery resources."],
];

export function registerInventoryTypes(registry: TypeRegistry): TypeRegistry {
  for (const [ns, d] of NAMESPACES) if (!registry.hasNamespace(ns)) registry.registerNamespace(ns, d);
  for (const t of [...HARDWARE_INVENTORY_TYPES, ...RUNTIME_INFO_TYPES, ...DISCOVERY_TYPES, ...NETWORK_EXTRA_TYPES, ...VOLUMES_TYPES, ...NODE_CONFIG_TYPES]) {
    registry.register(t);
  }
  return registry;
}

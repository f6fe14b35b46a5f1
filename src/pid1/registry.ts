/** Every resource type and namespace this build publishes through the COSI API. */
import { TypeRegistry } from "../machinery/resources/registry.js";
import { MachineConfigType, MachineTypeType } from "../machinery/resources/types/config.js";
import { MachineStatusType, ServiceType, VersionType } from "../machinery/resources/types/runtime.js";

const NAMESPACES: [string, string][] = [
  ["meta", "Metadata namespace which contains resource and namespace definitions."],
  ["config", "Talos node configuration."],
  ["runtime", "Talos runtime resources."],
  ["network", "Networking resources."],
  ["cluster", "Cluster configuration and discovery resources."],
  ["k8s", "Kubernetes all node types resources."],
  ["controlplane", "Kubernetes control plane resources."],
  ["etcd", "etcd resources."],
  ["hardware", "Hardware resources."],
  ["secrets", "Resources with secret material."],
];

export function buildRegistry(): TypeRegistry {
  const r = new TypeRegistry();
  for (const [ns, d] of NAMESPACES) r.registerNamespace(ns, d);
  r.register(MachineConfigType).register(MachineTypeType).register(MachineStatusType).register(VersionType).register(ServiceType);
  return r;
}

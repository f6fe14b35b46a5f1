/** Every resource type and namespace this build publishes through the COSI API. */
import { TypeRegistry } from "../machinery/resources/registry.js";
import { newResource } from "../machinery/resources/resource.js";
import {
  META_NAMESPACE,
  NAMESPACE_TYPE,
  namespaceType,
  resourceDefinitionSpec,
  resourceDefinitionType,
  RESOURCE_DEFINITION_TYPE,
} from "../machinery/resources/definitions.js";
import { MachineConfigType, MachineTypeType } from "../machinery/resources/types/config.js";
import { MachineStatusType, ServiceType, VersionType } from "../machinery/resources/types/runtime.js";
import type { State } from "../state/types.js";
import { registerNetworkTypes } from "../machinery/resources/types/network.js";
import { registerCoreTypes } from "../machinery/resources/types/cluster.js";
import { SECRETS_TYPES } from "../machinery/resources/types/secrets.js";
import { KERNEL_TYPES } from "../machinery/resources/types/kernel.js";
import { registerInventoryTypes } from "../machinery/resources/types/inventory.js";
import { K8S_CONTROLPLANE_TYPES } from "../machinery/resources/types/k8s-controlplane.js";
import { K8S_MANIFEST_TYPES } from "../machinery/resources/types/k8s-manifests.js";
import { K8S_STATUS_TYPES } from "../machinery/resources/types/k8s-status.js";

const NAMESPACES: [string, string][] = [
  ["meta", "Metadata namespace which contains resource and namespace definitions."],
  ["config", "Talos node configuration."],
  ["runtime", "Talos runtime resources."],
  ["network", "Networking resources."],
  ["network-config", "Networking configuration resources."],
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
  r.register(resourceDefinitionType).register(namespaceType);
  r.register(MachineConfigType).register(MachineTypeType).register(MachineStatusType).register(VersionType).register(ServiceType);
  registerNetworkTypes(r);
  registerCoreTypes(r);
  for (const t of [...SECRETS_TYPES, ...KERNEL_TYPES, ...K8S_CONTROLPLANE_TYPES, ...K8S_MANIFEST_TYPES, ...K8S_STATUS_TYPES]) r.register(t);
  registerInventoryTypes(r);
  return r;
}

const META_OWNER = "meta";

/** Write one ResourceDefinition per registered type and one Namespace per namespace into the store. */
export function publishDefinitions(state: State, registry: TypeRegistry): void {
  for (const t of registry.all()) {
    const rd = resourceDefinitionSpec(t);
    state.apply(newResource({ namespace: META_NAMESPACE, type: RESOURCE_DEFINITION_TYPE, id: rd.id }, rd.spec, META_OWNER), META_OWNER);
  }
  for (const [name, description] of registry.allNamespaces()) {
    state.apply(newResource({ namespace: META_NAMESPACE, type: NAMESPACE_TYPE, id: name }, { description }, META_OWNER), META_OWNER);
  }
}
